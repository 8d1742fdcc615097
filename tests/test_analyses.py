"""The record's analysis scripts (docs/analyses/) still run against today's package: each answers `--help`,
and every name each imports from cricket_attn, at the top or inside a function, exists. (Their full runs need
trained models and the whole archive: the record says which.)"""

from __future__ import annotations

import ast
import importlib
import importlib.util
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
def test_an_analysis_answers_help(script, monkeypatch, capsys):
    """Loaded as `python docs/analyses/<script>` loads it (in this process: the imports are the suite's own)."""
    spec = importlib.util.spec_from_file_location(f"analysis_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as done:
        module.main()
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {script.name}")
