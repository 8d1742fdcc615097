"""MLflow: one place for the tracking store, runs, and what every run records.

The default store is the SQLite file `mlflow.db` at the project root (conf/paths), so every run and
every sweep job lands in one place, with artifacts beside it in `mlartifacts/` whatever the current
folder; `make dashboard` (`mlflow ui --backend-store-uri sqlite:///mlflow.db`) shows them.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
from mlflow.entities import Dataset, DatasetInput, InputTag
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode
from mlflow.tracking import MlflowClient
from mlflow.tracking.context.registry import resolve_tags
from mlflow.utils.git_utils import get_git_commit
from mlflow.utils.mlflow_tags import (
    MLFLOW_DATASET_CONTEXT,
    MLFLOW_GIT_COMMIT,
    MLFLOW_RUN_NAME,
    MLFLOW_RUN_NOTE,
    MLFLOW_SOURCE_NAME,
)
from omegaconf import DictConfig, OmegaConf

from cricket_attn.atomic import atomic_path
from cricket_attn.config import DEFAULT_EXPERIMENT, PROJECT_ROOT
from cricket_attn.metrics import plot_phases, plot_reliability, score

# The project's store, for the command-line tools outside Hydra (conf/paths/default.yaml says the same).
RUN_FILE = "mlflow_run.json"  # in a run's output folder: which MLflow run it writes to (for resume)
PARAM_LIMIT = 6000  # MLflow's longest parameter value
# An experiment tag MLflow's UI reads: a model-training experiment opens on its runs, not on the GenAI
# overview (`dashboard.UI_VIEW` is the URL parameter that picks the same view).
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


class TrackingError(RuntimeError):
    """A tracking store that cannot be used; the message names the URI."""


class ResumeError(RuntimeError):
    """An output folder that cannot be resumed as it is; the message names the damaged file and what to do."""


def artifact_bars(shown: bool) -> None:
    """MLflow's own progress bars over artifact transfers: on a terminal only, not in a log."""
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "true" if shown else "false"


@contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """For a SQLite store, an exclusive lock on `<store>.lock` beside it; nothing for a server. MLflow creates
    a new store's tables on its first connection, and two processes doing so at once (two users, a sweep's
    parallel jobs) fail in SQLAlchemy: the first connection of each waits its turn."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    store = Path(uri.removeprefix("sqlite:///"))
    with open(store.with_name(store.name + ".lock"), "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(lock, fcntl.LOCK_UN)


@contextmanager
def quiet_store_creation() -> Iterator[None]:
    """MLflow's and Alembic's INFO lines as a new store's tables are made (a command's first run) held back:
    a command says one line on failure and its summary on success, nothing of a store's migrations."""
    loggers = [logging.getLogger(name) for name in ("mlflow.store.db.utils", "alembic.runtime.migration")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


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
        with store_lock(uri), quiet_store_creation():  # the first connection creates a new store
            MlflowClient(uri).search_experiments(max_results=1)
    except Exception as err:  # any store error gets the same one line, naming the URI
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


def artifact_location(uri: str) -> str | None:
    """Beside a SQLite store, `mlartifacts/` next to the database file; a server chooses its own."""
    if uri.startswith("sqlite:///"):
        return (Path(uri.removeprefix("sqlite:///")).resolve().parent / "mlartifacts").as_uri()
    return None


def experiment_id(uri: str, name: str) -> str:
    """The experiment's id, created if needed with its artifacts beside the store, and marked as model
    training (an experiment made by an older version gets the mark too)."""
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(name)
    if found is None:
        try:
            client.create_experiment(name, artifact_location(uri))
        except MlflowException as err:  # another process on the store made it meanwhile: a sweep's jobs
            if err.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
                raise
        found = client.get_experiment_by_name(name)
    if found.tags.get(EXPERIMENT_KIND[0]) != EXPERIMENT_KIND[1]:
        client.set_experiment_tag(found.experiment_id, *EXPERIMENT_KIND)
    return found.experiment_id


def command_line() -> str:
    """The command that made the run, as typed: `cricket-attn-train model.d_model=128`."""
    return " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])


def run_name(family: str, overrides: str = "", when: datetime | None = None) -> str:
    """What a run is, for MLflow's tables and chart legends: the family, the settings given on the
    command line (what differs from the default) and when it started, `transformer model.d_model=128
    11-22 19:05`. The baselines paired with a transformer run take its time, so one comparison reads
    as one group."""
    return f"{family} {overrides or 'default'} {(when or datetime.now()):%m-%d %H:%M}"


def start_run(
    uri: str,
    experiment: str,
    run_name: str | None,
    tags: dict[str, str],
    description: str | None = None,
    started: datetime | None = None,
) -> str:
    """A new RUNNING run in `experiment` (created if needed); returns its id. It carries what MLflow's
    fluent API would record (user, git commit), the command as its source and the whole command line
    as the tag `command`. `started`: its start time (default now), the time its name gives."""
    tags = {**resolve_tags(), MLFLOW_SOURCE_NAME: Path(sys.argv[0]).name, "command": command_line(), **tags}
    # MLflow looks for the commit beside the script, which sits in the git-ignored .venv: look beside the code.
    commit = get_git_commit(str(PROJECT_ROOT / "cricket_attn"))
    if commit:
        tags[MLFLOW_GIT_COMMIT] = commit
    tags.update({k: v for k, v in {MLFLOW_RUN_NAME: run_name, MLFLOW_RUN_NOTE: description}.items() if v})
    start_time = int(started.timestamp() * 1000) if started else None
    return MlflowClient(uri).create_run(experiment_id(uri, experiment), start_time=start_time, tags=tags).info.run_id


def log_datasets(uri: str, run_id: str, parts: dict[str, tuple[str, pd.DataFrame]], source: str, digest: str) -> None:
    """Each split's deliveries, by context (the split), with its seasons as people write them: a dataset
    input of the run, so MLflow's Dataset column shows which data and seasons a run saw. `digest` names
    the data's content. The schema is inferred from a sample holding the first rows and a missing value
    of every column that has one (MLflow reads every value otherwise: 20 s on the IPL's test seasons);
    the profile counts the whole split."""
    from mlflow.data import from_pandas

    inputs = []
    for context, (seasons, d) in parts.items():
        if d.empty:
            continue
        with warnings.catch_warnings():  # MLflow's hints about guessing the source kind and integer columns
            warnings.simplefilter("ignore")
            sampled = from_pandas(_schema_sample(d), source=source, digest=digest)._to_mlflow_entity()
        dataset = Dataset(
            name=f"{Path(source).name} {seasons}",
            digest=digest,
            source_type=sampled.source_type,
            source=sampled.source,
            schema=sampled.schema,
            profile=json.dumps({"num_rows": len(d), "num_elements": int(d.size)}),
        )
        inputs.append(DatasetInput(dataset, [InputTag(MLFLOW_DATASET_CONTEXT, context)]))
    MlflowClient(uri).log_inputs(run_id, datasets=inputs)


def _schema_sample(d: pd.DataFrame, rows: int = 1000) -> pd.DataFrame:
    """The first `rows` rows and, for each column with a missing value, its first row missing it: the
    same column types and the same `required` flags as the whole frame."""
    missing = d.isna()
    taken = set(range(min(rows, len(d)))) | {int(missing[c].to_numpy().argmax()) for c in d if missing[c].any()}
    return d.iloc[sorted(taken)]


@contextmanager
def system_metrics(uri: str, run_id: str, interval: float = 10.0, resume: bool = False) -> Iterator[None]:
    """CPU, memory and disk (and GPU, where there is one) as `system/*` metrics of the run, every
    `interval` seconds while the block runs (MLflow's own monitor)."""
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    logging.getLogger("mlflow.system_metrics").setLevel(logging.WARNING)  # not four lines per run about itself
    monitor = SystemMetricsMonitor(run_id, sampling_interval=interval, resume_logging=resume, tracking_uri=uri)
    monitor.start()
    try:
        yield
    finally:
        monitor.finish()


def log_config(uri: str, run_id: str, cfg: DictConfig) -> None:
    """The resolved config as an artifact and as flattened params. Params are logged only if the run
    has none yet, so a resumed run (whose output folder, say, differs) never fails on changed values."""
    client = MlflowClient(uri)
    client.log_text(run_id, OmegaConf.to_yaml(cfg, resolve=True), "config.yaml")
    if not client.get_run(run_id).data.params:
        log_params(uri, run_id, flatten(cfg))


def log_params(uri: str, run_id: str, params: dict[str, str]) -> None:
    batch = [mlflow.entities.Param(k, str(v)[:PARAM_LIMIT]) for k, v in params.items()]
    for start in range(0, len(batch), 100):  # MLflow takes at most 100 params per batch
        MlflowClient(uri).log_batch(run_id, params=batch[start : start + 100])


def log_report_run(
    uri: str,
    experiment: str,
    name: str,
    tags: dict[str, str],
    report: str,
    metrics: dict[str, float],
    params: dict[str, object],
    artifacts: list[tuple[Path, str | None]] = (),
) -> str:
    """One finished run of an evaluation command: its report as the description, its metrics and params, and
    its files (each with the artifact folder it goes in, None for the top); returns the run's id."""
    run_id = start_run(uri, experiment, name, tags, description=report)
    with ending(uri, run_id):
        client = MlflowClient(uri)
        client.log_batch(run_id, metrics=[mlflow.entities.Metric(k, float(v), 0, 0) for k, v in metrics.items()])
        log_params(uri, run_id, {k: str(v) for k, v in params.items()})
        for path, folder in artifacts:
            client.log_artifact(run_id, str(path), folder)
    return run_id


def log_scored(uri: str, run_id: str, scored: pd.DataFrame, split: str, title: str = "") -> dict[str, float]:
    """Metrics `<split>/...`, a reliability diagram, a per-phase plot and the scored deliveries."""
    client = MlflowClient(uri)
    metrics = score(scored)
    client.log_batch(
        run_id,
        metrics=[
            mlflow.entities.Metric(f"{split}/{k}", v, mlflow.utils.time.get_current_time_millis(), 0)
            for k, v in metrics.items()
        ],
    )
    with tempfile.TemporaryDirectory() as tmp:
        plot_reliability(scored, Path(tmp) / f"reliability_{split}.png", f"{title} reliability, {split}".strip())
        plot_phases(scored, Path(tmp) / f"phases_{split}.png", f"{title} log loss by phase, {split}".strip())
        scored.to_parquet(Path(tmp) / f"scored_{split}.parquet", index=False)
        client.log_artifacts(run_id, tmp, artifact_path="evaluation")
    return metrics


def load_scored(uri: str, run_id: str, split: str = "test") -> pd.DataFrame:
    """The scored deliveries a run logged with `log_scored`."""
    path = mlflow.artifacts.download_artifacts(
        run_id=run_id, artifact_path=f"evaluation/scored_{split}.parquet", tracking_uri=uri
    )
    return pd.read_parquet(path)


def write_run_file(folder: str | Path, info: dict[str, Any]) -> None:
    path = Path(folder) / RUN_FILE
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(info, indent=2))


def read_run_file(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / RUN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"resume={folder}: no {RUN_FILE} there; give the output folder of an earlier run")
    try:
        info = json.loads(path.read_text())
    except ValueError as err:  # cut short or not text: a full disk, a copy that stopped half way
        where = f" at line {err.lineno}, column {err.colno}" if isinstance(err, json.JSONDecodeError) else ""
        raise ResumeError(f"{path} is damaged (not valid JSON{where}): start a new run, or restore the file") from None
    if not isinstance(info, dict):
        raise ResumeError(f"{path} is damaged (not a JSON object): start a new run, or restore the file")
    return info


def drop_earlier_models(uri: str, run_id: str, name: str) -> list[str]:
    """Delete the run's logged models called `name`, so a run holds one, the last logged: an earlier attempt
    leaves one PENDING or FAILED if killed while it was logged, or READY if it ended with the selection stage
    alone and was then continued to its refit (`resume=... refit=true`). A model a registered version points
    to stays: the registry's users hold it. Returns the ids deleted."""
    client = MlflowClient(uri)
    experiment = client.get_run(run_id).info.experiment_id
    found = client.search_logged_models([experiment], f"source_run_id = '{run_id}' AND name = '{name}'")
    # A version names its model in `source` ("models:/<id>"); its `model_id` is empty on a SQL store.
    versions = client.search_model_versions(f"run_id = '{run_id}'")
    registered = {v.model_id or v.source.removeprefix("models:/") for v in versions}
    dropped = [m.model_id for m in found if m.model_id not in registered]
    for model_id in dropped:
        client.delete_logged_model(model_id)
    return dropped


@contextmanager
def stopping() -> Iterator[list[str]]:
    """Ctrl-C and SIGTERM (what a scheduler, `kill` or a closing session sends) made an interrupt while the block
    runs in the main thread. Lightning turns an interrupt during a fit into `SystemExit` (1; none on SIGTERM, which
    would exit with status 0): a stop leaves the block as KeyboardInterrupt all the same, so a sweep of runs stops
    with it and the command says how the run continues. Yields the names of the signals received."""
    stops: list[str] = []

    def stop(signum, frame):
        stops.append(signal.Signals(signum).name)
        raise KeyboardInterrupt(f"stopped by {stops[-1]}")

    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        yield stops
    except BaseException as err:
        if stops and not isinstance(err, KeyboardInterrupt):
            raise KeyboardInterrupt(f"stopped by {stops[-1]}") from err
        raise
    finally:
        for s, handler in previous.items():  # None: a handler installed from C, which Python cannot restore
            signal.signal(s, signal.SIG_DFL if handler is None else handler)


@contextmanager
def ending(uri: str, run_id: str) -> Iterator[None]:
    """The run ends as its block does: FINISHED; KILLED when stopped by Ctrl-C or SIGTERM (`stopping`); FAILED on
    an error. Only SIGKILL leaves a run RUNNING; a resumed training run then takes it up again."""
    with stopping() as stops:
        try:
            yield
        except BaseException as err:
            stopped = bool(stops) or isinstance(err, KeyboardInterrupt)
            MlflowClient(uri).set_terminated(run_id, "KILLED" if stopped else "FAILED")
            raise
    MlflowClient(uri).set_terminated(run_id, "FINISHED")


def latest_transformer_run(uri: str, experiment: str = DEFAULT_EXPERIMENT, data_key: str | None = None):
    """The finished transformer run with a test report that ended last, or None; with `data_key`, among
    the runs whose datasets (`log_datasets`) are the tables of that key."""
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return None
    runs = client.search_runs(
        [exp.experiment_id],
        "tags.model_family = 'transformer' and attributes.status = 'FINISHED' and metrics.`test/log_loss` > -1"
        + (f" and datasets.digest = '{data_key}'" if data_key else ""),
        order_by=["attributes.end_time DESC"],
        max_results=1,
    )
    return runs[0] if runs else None
