"""The package's stages import only what lies below them, and no module imports itself in a loop.

Every `import` in every module is read from its source (at the top or inside a function: a deferred
import still ties two stages together), so the check does not depend on what a test happens to run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import cricket_attn

PACKAGE = Path(cricket_attn.__file__).parent

# The floors, bottom first: a module may import its own floor and the ones below it.
FLOORS = (
    ("laws", "atomic", "config", "progress", "settings", "cli"),  # the laws, small helpers, the command-line kit
    ("metrics", "tracking", "dashboard"),  # MLflow: runs and what they record; what `make dashboard` shows
    ("data",),
    ("model",),  # pure PyTorch; a KV cache is what it is given (`model.Cache`), not what it imports
    ("inference",),  # what a trained model needs to run: checkpoints, serving, probabilities, the KV cache
    ("training",),
    ("simulation",),
    ("valuation",),  # what players are worth, from the ball model (it reads nothing of the simulator)
    ("commands",),  # the console scripts, one module each (pyproject.toml's [project.scripts], official_results)
)


def floor_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for level, names in enumerate(FLOORS):
        if top in names:
            return level
    raise AssertionError(f"{module}: not on any floor of FLOORS; add it where it belongs")


def package_imports() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cricket_attn"):
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)  # `from cricket_attn.data import x`
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("cricket_attn"))
        modules[name] = found
    return {name: {m for m in found if m in modules and m != name} for name, found in modules.items()}


def test_no_module_imports_a_later_stage():
    climbing = [
        f"{name} -> {dep}"
        for name, deps in package_imports().items()
        if name != "cricket_attn"
        for dep in deps
        if dep != "cricket_attn" and floor_of(dep) > floor_of(name)
    ]
    assert climbing == []


def test_no_import_loop():
    graph = package_imports()
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = "open"
        for dep in sorted(graph[name]):
            if state.get(dep) == "open":
                return [*path, name, dep]
            if dep not in state and (loop := visit(dep, [*path, name])):
                return loop
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            assert visit(name, []) is None


def test_every_console_script_is_a_main_of_its_own_module_in_commands():
    """pyproject.toml's scripts each name a `main` in cricket_attn/commands/, one module a script, and every module
    there is a script's (or `python -m`'s: official_results, which make main runs), but a kit two scripts share
    (a name starting with `_`)."""
    import importlib
    import tomllib

    scripts = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["scripts"]
    targets = [target.split(":") for target in scripts.values()]
    for module, function in targets:
        assert module.startswith("cricket_attn.commands.") and function == "main", module
        assert callable(getattr(importlib.import_module(module), function))
    assert len({module for module, _ in targets}) == len(targets)
    modules = {p.stem for p in (PACKAGE / "commands").glob("*.py") if not p.stem.startswith("_")}
    assert modules == {module.rsplit(".", 1)[1] for module, _ in targets} | {"official_results"}
    assert "cricket_attn.commands.official_results" in (PACKAGE.parent / "Makefile").read_text()


def test_a_module_reads_in_one_sitting():
    """Each module under 450 lines, the model's file alone excepted (read top to bottom, it is the model):
    a file that grows past it does more than one job and is split by job (STYLE.md)."""
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 450 and path.name != "model.py"
    }
    assert not long, long
