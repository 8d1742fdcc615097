"""`cricket-attn-ablate`: the ablation set of conf/ablation.yaml, run and reported in one command.

Each (variant, protocol, seed) is an ordinary `cricket-attn-train` run in its own output folder, tagged
`ablation`, `variant`, `protocol`, `seed` and `settings` in the ablation experiment. The runs to train go
as one multirun of the training app through Hydra's `hydra/launcher`: joblib here (`jobs` at once), or
the one given, e.g. submitit on a SLURM cluster. The jobs are a list, not a grid a sweeper could make, so
the launcher is handed each job's overrides directly. What a finished run scored, match by match, goes
into the record (`record_dir`, kept in git) as it finishes. A run in the record or FINISHED in the store
is not trained again and a killed one is resumed, so the command continues a stopped ablation, on this
machine or from a clone on another. The report pairs each variant with the default on the same balls:
the variant's log loss minus the default's, averaged over the seeds both have, with a 95% bootstrap
interval by match.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import hydra
import numpy as np
import pandas as pd
from hydra._internal.callbacks import Callbacks
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.errors import HydraException
from hydra.types import HydraContext, RunMode
from mlflow.utils.mlflow_tags import MLFLOW_GIT_COMMIT
from omegaconf import DictConfig, OmegaConf

from cricket_attn import progress, settings, tracking
from cricket_attn.atomic import atomic_path
from cricket_attn.config import CONF_DIR
from cricket_attn.data import deliveries, trees
from cricket_attn.metrics import match_bootstrap_sums, per_ball_log_loss

log = logging.getLogger(__name__)
REFERENCE = "default"


@dataclass(frozen=True)
class Job:
    variant: str
    protocol: str
    seed: int

    def __str__(self) -> str:
        return f"{self.variant} {self.protocol} seed {self.seed}"


def plan(cfg: DictConfig) -> list[Job]:
    """Seed by seed, so a stopped ablation has every variant at some seed before any at the next."""
    unknown = sorted(set(cfg.only or []) - set(cfg.variants))
    if unknown:
        raise ValueError(f"only: unknown variant(s) {unknown}; conf/ablation.yaml has {list(cfg.variants)}")
    variants = [v for v in cfg.variants if not cfg.only or v in cfg.only or v == REFERENCE]
    return every_job(cfg, variants)


def every_job(cfg: DictConfig, variants=None) -> list[Job]:
    """Every (variant, protocol, seed) of the set, or of the variants given, seed by seed."""
    return [
        Job(v, p, int(s))
        for s in cfg.seeds
        for v in (cfg.variants if variants is None else variants)
        for p in cfg.protocols
    ]


# The parts of a training config that say where a run goes and how it is logged, not what it is.
PLACE_KEYS = ("hydra", "paths", "logger", "progress", "mlflow", "resume", "seed")


@functools.cache
def settings_digest(overrides: tuple[str, ...]) -> str:
    """What a run is, whatever its variant is called in whichever set: a digest of the training config
    (conf/config.yaml) its overrides compose to, less where it runs and logs. So a variant another set has
    run is found again, and a run made while conf/ held other defaults is not taken for one of today's (a
    digest, so the tag passes the command line as one plain word). The deliveries table's schema and the
    teacher's features are in it too: a run on data an older ingest built is not one of today's (a change in how
    records or model features are computed from the same table is not seen: bump a version with it)."""
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF_DIR)))
    composed = loader.load_configuration("config", list(overrides), run_mode=RunMode.RUN)
    what = {k: v for k, v in OmegaConf.to_container(composed, resolve=False).items() if k not in PLACE_KEYS}
    what["data"].pop("data_dir", None)
    what["versions"] = {"deliveries": deliveries.SCHEMA_VERSION, "teacher": trees.TREES_VERSION}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


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


def job_subdir(job: Job) -> str:
    """A job's output folder within the ablation's `output_dir`."""
    return f"{job.protocol}/{job.variant}/seed{job.seed}"


def job_folder(cfg: DictConfig, job: Job) -> Path:
    return Path(cfg.output_dir) / job_subdir(job)


def job_overrides(cfg: DictConfig, job: Job) -> list[str]:
    """The overrides of the training app that make a job's run, or resume it where a killed one left its
    folder (whose `.hydra/` config the resume reads, so it is not written again)."""
    folder, place = job_folder(cfg, job), [f"hydra.sweep.subdir={job_subdir(job)}", "progress=lines"]
    if (folder / tracking.RUN_FILE).is_file():
        return [*place, f"resume={folder}", "hydra.output_subdir=null"]
    tags = {
        "ablation": cfg.name,
        "variant": job.variant,
        "protocol": job.protocol,
        "seed": job.seed,
        "settings": run_key(cfg, job)[0],
    }
    return [
        *place,
        *cfg.common,
        *cfg.protocols[job.protocol],
        *cfg.get("extra", []),
        *cfg.variants[job.variant],  # last: what the variant sets wins over what every run shares
        f"seed={job.seed}",
        f"paths.mlflow_uri={cfg.paths.mlflow_uri}",
        f"logger.experiment_name={cfg.experiment}",
        f"logger.run_name={cfg.name} {job}",
        *(f"+logger.tags.{k}={v}" for k, v in tags.items()),
    ]


def launcher_overrides(cfg: DictConfig, hydra_overrides: Sequence[str] = ()) -> list[str]:
    """The `hydra/launcher` the runs go through: the one chosen on the command line with its settings
    (`hydra/launcher=submitit_slurm hydra.launcher.partition=...`), else joblib, `jobs` runs at once."""
    chosen = [o for o in hydra_overrides if o.lstrip("+~").startswith(("hydra/launcher=", "hydra.launcher."))]
    return chosen or ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={cfg.jobs}"]


def launch(cfg: DictConfig, todo: list[Job], launcher: list[str]) -> list[JobReturn]:
    """Train the jobs as one multirun of `cricket-attn-train` (conf/config.yaml) through the launcher, each
    in its folder under `output_dir`; returns what each job came to, in order."""
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF_DIR)))
    sweep = loader.load_configuration(
        "config",
        [*launcher, f"hydra.sweep.dir={cfg.output_dir}", "hydra.job.name=train"],  # each run's log: train.log
        run_mode=RunMode.MULTIRUN,
    )
    runner = Plugins.instance().instantiate_launcher(
        hydra_context=HydraContext(config_loader=loader, callbacks=Callbacks(sweep)),
        task_function=TrainAndRecord(cfg, tuple(todo)),
        config=sweep,
    )
    with logging_kept():
        return list(runner.launch([job_overrides(cfg, job) for job in todo], initial_job_idx=0))


@dataclass(frozen=True)
class TrainAndRecord:
    """What the launcher runs for each job (by its number): the training run, with its share of the cores
    and its console output in `console.log` in its folder, then its line in the record. It carries the
    ablation's config, as the launcher may run it in another process or on a cluster node."""

    cfg: DictConfig
    jobs: tuple[Job, ...]

    def __call__(self, train_cfg: DictConfig) -> str:
        # torch and Lightning: imported only where a run trains
        from cricket_attn.training import train

        job, folder = self.jobs[HydraConfig.get().job.num], Path(HydraConfig.get().runtime.output_dir)
        clock, threads = progress.Stopwatch(), max(1, usable_cores() // self.cfg.jobs)
        log.info("%s: training with %d thread(s) (%s)", job, threads, folder)
        with job_threads(threads), console_to(folder / "console.log"):
            try:
                train.main(train_cfg)
            except SystemExit as stop:  # a setting refused, in one line in the console log
                raise RuntimeError(f"cricket-attn-train stopped with status {stop.code}") from None
            except Exception:
                traceback.print_exc()
                raise
        add_record(self.cfg, record_of(self.cfg, job, finished_runs(self.cfg)[job]))
        return str(clock)


def usable_cores() -> int:
    """The cores this process may run on: on a cluster node, its job's share."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextmanager
def job_threads(threads: int) -> Iterator[None]:
    """Torch's, OpenMP's and MKL's threads for one run, and as they were afterwards: runs at once share the cores."""
    import torch

    names = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
    before, torch_before = {n: os.environ.get(n) for n in names}, torch.get_num_threads()
    os.environ.update({n: str(threads) for n in names})
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(torch_before)
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def console_to(path: Path) -> Iterator[None]:
    """Everything this process writes to stdout and stderr, the libraries' own included, appended to `path`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(path, "a") as console:
            os.dup2(console.fileno(), 1)
            os.dup2(console.fileno(), 2)
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


@contextmanager
def logging_kept() -> Iterator[None]:
    """The ablation's own logging as it was after a launch: a launcher sets Hydra's up, and runs jobs here
    set theirs."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


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


def run_key(cfg: DictConfig, job: Job) -> tuple[str, str, int]:
    """What a job's run is found by, in the store and in the record of any set: (settings digest, protocol, seed)."""
    overrides = (*cfg.common, *cfg.get("extra", []), *cfg.variants[job.variant])
    try:
        return settings_digest(tuple(overrides)), job.protocol, job.seed
    except HydraException as err:
        raise ValueError(f"variant {job.variant}: {list(overrides)} make no training config: {err}") from None


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


def run_ablation(cfg: DictConfig, hydra_overrides: Sequence[str] = ()) -> str:
    """Train what neither the record nor the store has yet, through the launcher `hydra_overrides` choose
    (`launcher_overrides`), record it, then write and log the report; returns its markdown."""
    settings.check(cfg, settings.ABLATION)
    tracking.check_tracking_uri(cfg.paths.mlflow_uri)
    jobs = plan(cfg)
    done = recorded_runs(cfg)
    if not cfg.report_only:
        todo = [job for job in jobs if job not in done]
        launcher = launcher_overrides(cfg, hydra_overrides)
        log.info(
            "ablation %s: %d runs, %d in the record, %d to train (%s)",
            cfg.name,
            len(jobs),
            len(jobs) - len(todo),
            len(todo),
            " ".join(launcher),
        )
        returns = launch(cfg, todo, launcher) if todo else []
        failed = [job for job, ret in zip(todo, returns) if ret.status != JobStatus.COMPLETED]
        for job, ret in zip(todo, returns):
            if job in failed:
                log.warning("%s: FAILED (see %s)", job, job_folder(cfg, job) / "console.log")
            else:
                log.info("%s: done in %s", job, ret.return_value)
        if failed:
            log.warning("%d run(s) failed; run the same command again to retry them", len(failed))
        done = recorded_runs(cfg)
    rows, seeds = comparisons(cfg, done)
    table = report(cfg, rows)
    folder = Path(cfg.output_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "ablation.md") as tmp:
        tmp.write_text(table)
    with atomic_path(folder / "ablation_seeds.csv") as tmp:
        seeds.to_csv(tmp, index=False, float_format="%.6g")
    log_report(cfg, table, rows, folder / "ablation_seeds.csv")
    print(table)
    print(f"written: {folder / 'ablation.md'}")
    return table


def match_sums(variant: dict, reference: dict) -> pd.DataFrame:
    """Per match, the variant's summed log loss minus the reference's (`diff`), and its balls."""
    mine = pd.DataFrame(variant["matches"], columns=["match_id", "balls", "loss"]).set_index("match_id")
    ref = pd.DataFrame(reference["matches"], columns=["match_id", "balls", "loss"]).set_index("match_id")
    if set(mine.index) != set(ref.index) or not (ref.loc[mine.index, "balls"] == mine["balls"]).all():
        raise ValueError(f"runs {variant['run']!r} and {reference['run']!r} did not score the same balls")
    return pd.DataFrame({"diff": mine["loss"] - ref.loc[mine.index, "loss"], "balls": mine["balls"]})


def seed_averaged_difference(variant: list[dict], reference: list[dict], n_boot: int) -> dict:
    """Per match, the variant's log loss minus the reference's, averaged over the seeds (the records
    are paired seed by seed), per ball with its bootstrap interval by match."""
    sums = [match_sums(v, r) for v, r in zip(variant, reference)]
    mean = pd.concat([s["diff"] for s in sums], axis=1).mean(axis=1)
    return match_bootstrap_sums(mean.to_numpy(), sums[0]["balls"].to_numpy(), n_boot)


def comparisons(cfg: DictConfig, runs: dict[Job, dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, seeds), from the records of this ablation's runs. The summary has one row per variant and
    protocol: seeds, mean log loss and ECE over seeds, epochs chosen, and the seed-averaged paired
    difference from the reference (positive: the variant is worse). `seeds` has one row per run, with its
    own paired difference."""
    rows, per_seed = [], []
    for protocol in cfg.protocols:
        for variant in cfg.variants:
            against = cfg.get("against", {}).get(variant, REFERENCE)
            seeds = sorted(job.seed for job in runs if job.variant == variant and job.protocol == protocol)
            if not seeds:
                continue
            for s in seeds:
                rec = runs[Job(variant, protocol, s)]
                seed_row = {
                    "protocol": protocol,
                    "variant": variant,
                    "seed": s,
                    "run": rec["run"],
                    "commit": rec["commit"],
                    **{k: rec[k] for k in ("log_loss", "ece", "epochs", "val_log_loss")},
                }
                if variant != against and Job(against, protocol, s) in runs:
                    sums = match_sums(rec, runs[Job(against, protocol, s)])
                    seed_row["diff"] = float(sums["diff"].sum() / sums["balls"].sum())
                per_seed.append(seed_row)
            mine = pd.DataFrame([r for r in per_seed if r["variant"] == variant and r["protocol"] == protocol])
            row = {
                "protocol": protocol,
                "variant": variant,
                "against": against,
                "seeds": len(seeds),
                **mine[["log_loss", "ece", "epochs", "val_log_loss"]].astype(float).mean().to_dict(),
                "epochs_chosen": ",".join(str(int(e)) for e in mine["epochs"]),
            }
            row.update(seed_paired(cfg, runs, variant, against, protocol))
            control = cfg.get("control")
            if control and variant != control:
                row.update({f"control_{k}": v for k, v in seed_paired(cfg, runs, variant, control, protocol).items()})
            rows.append(row)
    return pd.DataFrame(rows), pd.DataFrame(per_seed)


def seed_paired(cfg: DictConfig, runs: dict[Job, dict], variant: str, against: str, protocol: str) -> dict:
    """The variant's seed-averaged difference from `against` on the protocol's test seasons (`diff`, with
    `ci_low`, `ci_high`) and on its validation season (`val_diff`), over the seeds both have; {} if none."""
    paired = sorted(
        j.seed
        for j in runs
        if j.variant == variant and j.protocol == protocol and Job(against, protocol, j.seed) in runs
    )
    if variant == against or not paired:
        return {}
    mine, theirs = [runs[Job(variant, protocol, s)] for s in paired], [runs[Job(against, protocol, s)] for s in paired]
    # The validation season's log loss (the selection model's, calibrated): one more season to point the
    # same way, with no interval (the record keeps its total, not its matches).
    val_diff = float(np.mean([m["val_log_loss"] - t["val_log_loss"] for m, t in zip(mine, theirs)]))
    return {"paired_seeds": len(paired), "val_diff": val_diff, **seed_averaged_difference(mine, theirs, cfg.n_boot)}


def report(cfg: DictConfig, rows: pd.DataFrame) -> str:
    """The summary of `comparisons` as a markdown table, variants down, protocols across."""
    if rows.empty:
        return f"# Ablation `{cfg.name}`\n\nNo finished runs yet.\n"
    protocols = [p for p in cfg.protocols if p in set(rows["protocol"])]
    head = (
        "| variant | "
        + " | ".join(
            f"{p}: log loss (epochs by seed) | {p}: - reference [95% CI] | {p}: validation - reference"
            for p in protocols
        )
        + " |"
    )
    lines = [
        f"# Ablation `{cfg.name}`",
        "",
        "Each cell: the mean over seeds of the run's log loss (nats per ball) on the protocol's test seasons "
        "(in brackets, the epochs each seed's refit trained, as chosen on its validation season), "
        "and the per-ball difference from its reference (`default` unless named), averaged over the seeds "
        "both have, with a 95% bootstrap interval by match. Positive: the variant is worse. Protocols: "
        + "; ".join(f"`{p}` {' '.join(o) if o else '(the default split)'}" for p, o in cfg.protocols.items())
        + ". The third column of a protocol: the same difference on its validation season (the selection "
        "model's calibrated log loss; no interval). Every run's own numbers are in `ablation_seeds.csv`.",
        "",
        head,
        "|" + "---|" * (1 + 3 * len(protocols)),
    ]
    variants = [v for v in cfg.variants if v in set(rows["variant"])]
    for variant in variants:
        cells = []
        for protocol in protocols:
            hit = rows[(rows["variant"] == variant) & (rows["protocol"] == protocol)]
            if hit.empty:
                cells += ["", "", ""]
                continue
            r = hit.iloc[0]
            cells.append(f"{r['log_loss']:.4f} ({r['epochs_chosen']})")
            if pd.notna(r.get("diff")):
                vs = "" if r["against"] == REFERENCE else f" vs {r['against']}"
                cells.append(interval_cell(r, "") + vs)
            else:
                cells.append("reference" if variant == r["against"] or variant == REFERENCE else "")
            cells.append(f"{r['val_diff']:+.4f}" if pd.notna(r.get("val_diff")) else "")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    control = cfg.get("control")
    if control and "control_diff" in rows:
        lines += [
            "",
            f"Against the control, `{control}` (the same seeds, balls and intervals; negative: the variant "
            "is better than the control):",
            "",
            "| variant | "
            + " | ".join(f"{p}: - {control} [95% CI] | {p}: validation - {control}" for p in protocols)
            + " |",
            "|" + "---|" * (1 + 2 * len(protocols)),
        ]
        for variant in variants:
            cells = []
            for protocol in protocols:
                hit = rows[(rows["variant"] == variant) & (rows["protocol"] == protocol)]
                r = hit.iloc[0] if not hit.empty else {}
                if variant == control:
                    cells += ["control", ""]
                elif pd.notna(r.get("control_diff")):
                    cells += [interval_cell(r, "control_"), f"{r['control_val_diff']:+.4f}"]
                else:
                    cells += ["", ""]
            lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def interval_cell(row, prefix: str) -> str:
    """A report cell: the paired difference (`diff`, or `control_diff` with prefix `control_`) and its interval."""
    return f"{row[prefix + 'diff']:+.4f} [{row[prefix + 'ci_low']:+.4f}, {row[prefix + 'ci_high']:+.4f}]"


def log_report(cfg: DictConfig, table: str, rows: pd.DataFrame, seeds_csv: Path) -> None:
    """The report as an MLflow run of the ablation experiment: the table as its description and artifact,
    each variant's paired difference as metrics (`<protocol>/<variant>/diff`), every run's numbers."""
    uri = cfg.paths.mlflow_uri
    client = tracking.MlflowClient(uri)
    exp = client.get_experiment_by_name(cfg.experiment)
    for old in client.search_runs([exp.experiment_id], f"tags.ablation_summary = '{cfg.name}'") if exp else []:
        client.delete_run(old.info.run_id)  # one summary per ablation: the latest report
    run_id = tracking.start_run(
        uri, cfg.experiment, f"{cfg.name} summary", {"ablation_summary": cfg.name}, description=table
    )
    with tracking.ending(uri, run_id):
        for r in rows.to_dict("records"):
            for key in (
                "log_loss",
                "ece",
                "diff",
                "ci_low",
                "ci_high",
                "control_diff",
                "control_ci_low",
                "control_ci_high",
            ):
                if key in r and pd.notna(r[key]):
                    client.log_metric(run_id, f"{r['protocol']}/{r['variant']}/{key}", float(r[key]))
        client.log_text(run_id, table, "ablation.md")
        client.log_artifact(run_id, str(seeds_csv))


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="ablation")
def main(cfg: DictConfig) -> None:
    tracking.artifact_bars(False)
    try:
        run_ablation(cfg, list(HydraConfig.get().overrides.hydra))
    except (ValueError, tracking.TrackingError) as err:
        print(f"cricket-attn-ablate: {err}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
