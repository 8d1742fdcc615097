"""The package's old module names (before the regroup of 2026-11-23) import the modules now in its
folders, as the same objects, so MLflow models logged and runs started before still load."""

from __future__ import annotations

import importlib
import subprocess
import sys

from hydra.utils import get_class

import cricket_attn


def test_every_old_name_imports_the_module_at_its_new_place():
    for old, new in cricket_attn._MOVED.items():
        moved = importlib.import_module(f"cricket_attn.{new}")
        assert importlib.import_module(f"cricket_attn.{old}") is moved
        assert moved.__name__ == moved.__spec__.name == f"cricket_attn.{new}"  # its own name kept
    assert get_class("cricket_attn.datamodule.CricketDataModule") is get_class("cricket_attn.data.datamodule.CricketDataModule")


def test_the_old_names_import_first_in_a_fresh_process():
    # What an MLflow model logged before does: its wrapper imports the old names before anything else.
    code = ("from cricket_attn.serving import CHECKPOINT_ARTIFACT, from_checkpoint\n"
            "from cricket_attn.deliveries import plain_types, restore_types\n"
            "import cricket_attn.scoring.serving as s, cricket_attn.data.deliveries as d\n"
            "assert from_checkpoint is s.from_checkpoint and restore_types is d.restore_types\n"
            "from cricket_attn.serving import DeliveriesModel\n"
            "print(DeliveriesModel.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "cricket_attn.scoring.mlflow_model"
    gone = subprocess.run([sys.executable, "-c", "import cricket_attn.no_such_module"], capture_output=True, text=True)
    assert gone.returncode != 0 and "No module named 'cricket_attn.no_such_module'" in gone.stderr
