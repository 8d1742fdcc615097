"""Where the project's `conf/` tree and `data/` folder are, and reading the data config."""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

# The package is used from a checkout (pip install -e .): conf/ and data/ sit beside it.
PROJECT_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = PROJECT_ROOT / "conf"
DEFAULT_TRACKING_URI = f"sqlite:///{PROJECT_ROOT / 'mlflow.db'}"  # the project's MLflow store
DEFAULT_EXPERIMENT = "cricket_attn"  # conf/logger/mlflow.yaml's experiment_name (a test holds them equal)


def load_data_config(name: str = "ipl") -> DictConfig:
    """`conf/data/<name>.yaml` as an OmegaConf object, on top of the data configs its `defaults` name (as
    Hydra composes it: `defaults: [ipl, _self_]` is conf/data/ipl.yaml with this file's settings over it)."""
    path = CONF_DIR / "data" / f"{name}.yaml"
    if not path.exists():
        options = sorted(p.stem for p in (CONF_DIR / "data").glob("*.yaml"))
        raise FileNotFoundError(f"no data config {name!r} in {CONF_DIR / 'data'} (have: {', '.join(options)})")
    cfg = OmegaConf.load(path)
    bases = [load_data_config(base) for base in cfg.pop("defaults", []) if base != "_self_"]
    return OmegaConf.merge(*bases, cfg)


def project_path(path: str | Path) -> Path:
    """A path from config: relative paths are taken from the project root, not the current folder."""
    path = Path(path)
    return path if path.is_absolute() else PROJECT_ROOT / path


# `${project_root:}` in conf/ (paths.root_dir): the checkout, so outputs and mlflow.db land in one
# place whatever the current folder.
if not OmegaConf.has_resolver("project_root"):
    OmegaConf.register_new_resolver("project_root", lambda: str(PROJECT_ROOT))

# `${pid:}` in conf/ (hydra.run.dir, hydra.sweep.dir): this process's id after the time, so two runs started
# in the same second on one machine get folders of their own. Cached, as Hydra's `${now:}` is, so a sweep's
# jobs (joblib's worker processes among them) share their sweep's folder.
if not OmegaConf.has_resolver("pid"):
    OmegaConf.register_new_resolver("pid", lambda: str(os.getpid()), use_cache=True)
