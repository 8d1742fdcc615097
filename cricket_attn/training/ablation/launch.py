"""The jobs to train, as one multirun of `cricket-attn-train` through Hydra's `hydra/launcher` (joblib here,
or one given, e.g. submitit on a SLURM cluster). The jobs are a list, not a grid a sweeper could make, so
the launcher is handed each job's overrides directly: the one place that uses Hydra's internal API."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hydra._internal.callbacks import Callbacks
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.core.hydra_config import HydraConfig
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn
from hydra.types import HydraContext, RunMode
from omegaconf import DictConfig

from cricket_attn import progress
from cricket_attn.config import CONF_DIR
from cricket_attn.training.ablation.jobs import Job, job_overrides
from cricket_attn.training.ablation.record import add_record, finished_runs, record_of

log = logging.getLogger(__name__)


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
        from cricket_attn.training.train import train_job

        job, folder = self.jobs[HydraConfig.get().job.num], Path(HydraConfig.get().runtime.output_dir)
        clock, threads = progress.Stopwatch(), max(1, usable_cores() // self.cfg.jobs)
        log.info("%s: training with %d thread(s) (%s)", job, threads, folder)
        with job_threads(threads), console_to(folder / "console.log"):
            try:
                train_job(train_cfg)
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
