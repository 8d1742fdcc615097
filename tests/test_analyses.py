"""The record's analysis scripts (docs/analyses/) still run against today's package: each answers `--help`,
and every name each imports from cricket_attn, at the top or inside a function, exists. (Their full runs need
trained models and the whole archive: the record says which.)"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ANALYSES = sorted((Path(__file__).parents[1] / "docs" / "analyses").glob("*.py"))


def test_there_are_analyses():
    assert len(ANALYSES) >= 5


@pytest.mark.parametrize("script", ANALYSES, ids=lambda p: p.name)
def test_an_analysis_imports_only_what_exists(script):
    missing = []
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cricket_attn"):
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("cricket_attn"):
                    importlib.import_module(alias.name)
    assert missing == []


@pytest.mark.parametrize("script", ANALYSES, ids=lambda p: p.name)
def test_an_analysis_answers_help(script):
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
