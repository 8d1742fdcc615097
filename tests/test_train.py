"""The Hydra training app composes the real config and runs end to end on real matches."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from cricket_attn.config import CONF_DIR
from cricket_attn.model import ConfigError
from cricket_attn.train import train
from tests.conftest import FIXTURES


def tiny_config(tmp_path, *extra: str):
    overrides = [
        f"data.sources=[{FIXTURES}]", f"data.data_dir={tmp_path / 'data'}", "data.min_count=5", "data.batch_size=8",
        "model.d_model=8", "model.n_heads=2", "model.n_layers=1", "trainer.max_epochs=2", "optim.warmup_steps=2",
        f"output_dir={tmp_path / 'run'}", *extra,
    ]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def test_fit_refit_and_test_on_real_matches(tmp_path):
    results = train(tiny_config(tmp_path))
    assert 1.0 < results["test/loss"] < 3.0 and 0.0 <= results["test/ece"] <= 1.0
    assert results["selection/epochs"] in (1, 2)
    assert "refit" in results["checkpoint"] and (tmp_path / "run" / "checkpoints").is_dir()


def test_data_larger_than_the_model_fails_at_start_up_naming_the_setting(tmp_path):
    with pytest.raises(ConfigError, match=r"model.max_len=50 is too small: the data has \d+ deliveries"):
        train(tiny_config(tmp_path, "model.max_len=50"))
    with pytest.raises(ConfigError, match="model.d_model=8 is not divisible by model.n_heads=3"):
        train(tiny_config(tmp_path, "model.n_heads=3"))


def test_console_script_finds_conf_from_any_folder(tmp_path):
    import shutil
    import subprocess

    exe = shutil.which("cricket-attn-train") or str(Path(sys.executable).with_name("cricket-attn-train"))
    out = subprocess.run([exe, "--cfg", "job", "model.d_model=32"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "d_model: 32" in out.stdout and "_target_: cricket_attn.datamodule.CricketDataModule" in out.stdout
    bad = subprocess.run([exe, "model.d_modle=32"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode != 0 and "d_modle" in bad.stderr
