"""Ball-by-ball cricket outcome prediction over Cricsheet data.

The package in the order data flows: `data` (Cricsheet files to training batches) → `model` (the causal
transformer, pure PyTorch) → `training` (the protocol, baselines, ablations) → `scoring` (a trained model
over deliveries) → `simulation` (matches rolled forward); `attention` shows what the heads look at.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

# Modules that lived at the top of the package until 2026-11-23, by their place since. MLflow models
# logged before, and the saved configs of runs started before, import them by the old names.
_MOVED = {
    **{m: f"data.{m}" for m in ("sources", "cricsheet", "deliveries", "checks", "ingest", "splits", "features",
                                "histories", "sequences", "teacher", "datamodule")},
    **{m: f"training.{m}" for m in ("lit_module", "train", "ablation", "baselines")},
    **{m: f"scoring.{m}" for m in ("checkpoints", "serving", "mlflow_model", "recent", "predict", "evaluate")},
    **{m: f"simulation.{m}" for m in ("simulate", "simulate_eval")},
}


class _OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `cricket_attn.<old>` as the module now at `cricket_attn.<new>` (the same module object)."""

    def find_spec(self, name, path=None, target=None):
        old = name.removeprefix(f"{__name__}.")
        return importlib.util.spec_from_loader(name, self) if old in _MOVED and old != name else None

    def create_module(self, spec):
        module = importlib.import_module(f"{__name__}.{_MOVED[spec.name.removeprefix(f'{__name__}.')]}")
        spec.loader_state = module.__spec__  # the import machinery writes `spec` over it next
        return module

    def exec_module(self, module):
        own = module.__spec__.loader_state
        module.__spec__, module.__loader__ = own, own.loader


sys.meta_path.append(_OldNames())
