"""The record: what each finished run scored, match by match, kept in git (`record_dir`, a JSON line per run
in `<set>.jsonl`). The paired report needs nothing more, so it can be rebuilt from a clone, and an ablation
too long for one machine's life carries on from the record on another."""

from __future__ import annotations

import fcntl
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from mlflow.utils.mlflow_tags import MLFLOW_GIT_COMMIT
from omegaconf import DictConfig

from cricket_attn import tracking
from cricket_attn.atomic import atomic_path
from cricket_attn.metrics import per_ball_log_loss
from cricket_attn.training.ablation.jobs import Job, every_job, run_key

log = logging.getLogger(__name__)


def finished_runs(cfg: DictConfig) -> dict[Job, str]:
    """The FINISHED runs in the store that this ablation's jobs would make, by job (the newest when one
    was run twice). A run is found by its settings (the tag `settings`), protocol and seed, so a variant
    another set has run already (the default, the self-only control) is not trained again."""
    client = tracking.MlflowClient(cfg.paths.mlflow_uri)
    exp = client.get_experiment_by_name(cfg.experiment)
    if exp is None:
        return {}
    runs = client.search_runs(
        [exp.experiment_id],
        "tags.ablation != '' and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time ASC"],
        max_results=5000,
    )
    found = {}
    for r in runs:
        tags = r.data.tags
        if "test/log_loss" not in r.data.metrics or "ablation_summary" in tags:
            continue
        if "settings" in tags:
            found[(tags["settings"], tags["protocol"], int(tags["seed"]))] = r.info.run_id
    return {job: found[run_key(cfg, job)] for job in every_job(cfg) if run_key(cfg, job) in found}


# The record: what each finished run scored, match by match, kept in git (`record_dir`, a JSON line per
# run in `<set>.jsonl`). The paired report needs nothing more, so it can be rebuilt from a clone, and an
# ablation too long for one machine's life carries on from the record on another.
@contextmanager
def record_lock(cfg: DictConfig) -> Iterator[None]:
    """Held while a set's record is rewritten, so runs that finish at once, in other processes too, each
    keep their line. The lock file is in `output_dir`, out of git."""
    path = Path(cfg.output_dir) / "record.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)  # released as the file closes
        yield


def read_record(record_dir: str | Path) -> dict[tuple[str, str, int], dict]:
    """Every recorded run, of every set, by (settings, protocol, seed): the newest when one is there twice."""
    found = {}
    for path in sorted(Path(record_dir).glob("*.jsonl")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                key = recorded_run_key(rec)
                if not rec["matches"] or any(len(m) != 3 for m in rec["matches"]):
                    raise ValueError("field 'matches' must list [match_id, balls, log-loss sum] for each match")
            except (ValueError, KeyError, TypeError) as err:
                raise ValueError(f"{path}: line {number}: not an ablation record: {err}") from None
            found[key] = rec
    return found


def record_of(cfg: DictConfig, job: Job, run_id: str) -> dict:
    """What a finished run of the store goes into the record as: its settings and metrics, and for each
    test match (in the order the run scored them) its balls and the sum of their log loss."""
    run = tracking.MlflowClient(cfg.paths.mlflow_uri).get_run(run_id)
    scored = tracking.load_scored(cfg.paths.mlflow_uri, run_id)
    by_match = scored.assign(loss=per_ball_log_loss(scored)).groupby("match_id", sort=False)["loss"]
    m, key = run.data.metrics, run_key(cfg, job)
    return {
        "set": cfg.name,
        "variant": job.variant,
        "protocol": job.protocol,
        "seed": job.seed,
        "settings": key[0],
        "overrides": [*cfg.variants[job.variant], *cfg.get("extra", [])],
        "run": run.info.run_name,
        "commit": run.data.tags.get(MLFLOW_GIT_COMMIT),
        "finished": datetime.fromtimestamp(run.info.end_time / 1000, UTC).isoformat(timespec="seconds"),
        "log_loss": m["test/log_loss"],
        "ece": m["test/ece"],
        "epochs": m.get("selection/epochs"),
        "val_log_loss": m.get("calibration/val_log_loss_after", m.get("selection/best_val_loss")),
        "matches": [
            [json_match_id(match), int(n), round(float(total), 6)]
            for (match, n), total in zip(by_match.size().items(), by_match.sum())
        ],
    }


def json_match_id(match_id):
    """A match id as JSON writes it: numpy's integers as plain ints."""
    return match_id.item() if hasattr(match_id, "item") else match_id


def add_record(cfg: DictConfig, rec: dict) -> None:
    """Write one run into its set's record file, in place of an earlier record of the same run."""
    path = Path(cfg.record_dir) / f"{cfg.name}.jsonl"
    with record_lock(cfg):
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [line for line in (path.read_text().splitlines() if path.is_file() else []) if line.strip()]
        lines = [line for line in lines if recorded_run_key(json.loads(line)) != recorded_run_key(rec)]
        with atomic_path(path) as tmp:
            tmp.write_text("".join(f"{line}\n" for line in [*lines, json.dumps(rec, separators=(",", ":"))]))


def recorded_run_key(rec: dict) -> tuple[str, str, int]:
    """`run_key` of a record line."""
    return rec["settings"], rec["protocol"], int(rec["seed"])


def recorded_runs(cfg: DictConfig) -> dict[Job, dict]:
    """The record's runs for this ablation's jobs, after recording any finished run of the store the
    record lacks."""
    record = read_record(cfg.record_dir)
    for job, run_id in finished_runs(cfg).items():
        if run_key(cfg, job) not in record:
            log.info("%s: recorded from run %s", job, run_id)
            add_record(cfg, record_of(cfg, job, run_id))
    record = read_record(cfg.record_dir)
    return {job: record[run_key(cfg, job)] for job in every_job(cfg) if run_key(cfg, job) in record}
