"""MLflow: one place for the tracking store, runs, and what every run records.

The default store is the SQLite file `mlflow.db` at the project root (conf/paths), so every run and
every sweep job lands in one place; `mlflow ui --backend-store-uri sqlite:///mlflow.db` shows them.
"""

from __future__ import annotations

import json
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
from mlflow.tracking import MlflowClient
from omegaconf import DictConfig, OmegaConf

from cricket_attn.atomic import atomic_path
from cricket_attn.config import PROJECT_ROOT
from cricket_attn.metrics import plot_phases, plot_reliability, score

# The project's store, for the command-line tools outside Hydra (conf/paths/default.yaml says the same).
DEFAULT_TRACKING_URI = f"sqlite:///{PROJECT_ROOT / 'mlflow.db'}"
RUN_FILE = "mlflow_run.json"  # in a run's output folder: which MLflow run it writes to (for resume)
PARAM_LIMIT = 6000  # MLflow's longest parameter value


class TrackingError(RuntimeError):
    """A tracking store that cannot be used; the message names the URI."""


def check_tracking_uri(uri: str, timeout: float = 5.0) -> None:
    """Fail fast, naming the URI, if the store cannot be reached, before any training starts."""
    if uri.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout) as reply:
                if reply.status != 200:
                    raise TrackingError(f"MLflow tracking URI {uri} answered {reply.status} on /health")
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise TrackingError(f"MLflow tracking URI {uri} cannot be reached: {err}") from None
    elif uri.startswith("sqlite:///"):
        folder = Path(uri.removeprefix("sqlite:///")).parent
        if not folder.is_dir():
            raise TrackingError(f"MLflow tracking URI {uri}: folder {folder} does not exist")
    try:
        MlflowClient(uri).search_experiments(max_results=1)
    except Exception as err:  # noqa: BLE001 - any store error gets the same one line, naming the URI
        raise TrackingError(f"MLflow tracking URI {uri} cannot be used: {type(err).__name__}: {err}") from None


def flatten(cfg: DictConfig | dict, prefix: str = "") -> dict[str, str]:
    """Nested config as dotted keys with string values (MLflow params)."""
    items = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg
    out: dict[str, str] = {}
    for key, value in items.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = str(value)[:PARAM_LIMIT]
    return out


def start_run(uri: str, experiment: str, run_name: str | None, tags: dict[str, str]) -> str:
    """A new RUNNING run in `experiment` (created if needed); returns its id."""
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    exp_id = found.experiment_id if found else client.create_experiment(experiment)
    tags = {"mlflow.runName": run_name, **tags} if run_name else dict(tags)
    return client.create_run(exp_id, tags=tags).info.run_id


def log_config(uri: str, run_id: str, cfg: DictConfig) -> None:
    """The resolved config as an artifact and as flattened params. Params are logged only if the run
    has none yet, so a resumed run (whose output folder, say, differs) never fails on changed values."""
    client = MlflowClient(uri)
    resolved = OmegaConf.to_yaml(cfg, resolve=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(resolved)
        client.log_artifact(run_id, str(path))
    if not client.get_run(run_id).data.params:
        log_params(uri, run_id, flatten(cfg))


def log_params(uri: str, run_id: str, params: dict[str, str]) -> None:
    batch = [mlflow.entities.Param(k, str(v)[:PARAM_LIMIT]) for k, v in params.items()]
    for start in range(0, len(batch), 100):  # MLflow takes at most 100 params per batch
        MlflowClient(uri).log_batch(run_id, params=batch[start:start + 100])


def log_scored(uri: str, run_id: str, scored: pd.DataFrame, split: str, title: str = "") -> dict[str, float]:
    """Metrics `<split>/...`, a reliability diagram, a per-phase plot and the scored deliveries."""
    client = MlflowClient(uri)
    metrics = score(scored)
    client.log_batch(run_id, metrics=[mlflow.entities.Metric(f"{split}/{k}", v, mlflow.utils.time.get_current_time_millis(), 0)
                                      for k, v in metrics.items()])
    with tempfile.TemporaryDirectory() as tmp:
        plot_reliability(scored, Path(tmp) / f"reliability_{split}.png", f"{title} reliability, {split}".strip())
        plot_phases(scored, Path(tmp) / f"phases_{split}.png", f"{title} log loss by phase, {split}".strip())
        scored.to_parquet(Path(tmp) / f"scored_{split}.parquet", index=False)
        client.log_artifacts(run_id, tmp, artifact_path="evaluation")
    return metrics


def load_scored(uri: str, run_id: str, split: str = "test") -> pd.DataFrame:
    """The scored deliveries a run logged with `log_scored`."""
    path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=f"evaluation/scored_{split}.parquet",
                                               tracking_uri=uri)
    return pd.read_parquet(path)


def write_run_file(folder: str | Path, info: dict[str, Any]) -> None:
    path = Path(folder) / RUN_FILE
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(info, indent=2))


def read_run_file(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / RUN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"resume={folder}: no {RUN_FILE} there; give the output folder of an earlier run")
    return json.loads(path.read_text())


def end_run(uri: str, run_id: str, status: str) -> None:
    MlflowClient(uri).set_terminated(run_id, status)


def latest_transformer_run(uri: str, experiment: str = "cricket_attn"):
    """The newest finished transformer run that has a test report, or None."""
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return None
    runs = client.search_runs([exp.experiment_id], "tags.model_family = 'transformer' and attributes.status = 'FINISHED'",
                              order_by=["attributes.start_time DESC"], max_results=20)
    return next((run for run in runs if "test/log_loss" in run.data.metrics), None)
