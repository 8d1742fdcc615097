"""The jobs of an ablation set (conf/ablation.yaml): each (variant, protocol, seed), the training overrides
that make its run, and the digest of the settings its run is found by, in the store and in the record."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from cricket_attn import tracking
from cricket_attn.config import CONF_DIR
from cricket_attn.data import deliveries, trees

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


def run_key(cfg: DictConfig, job: Job) -> tuple[str, str, int]:
    """What a job's run is found by, in the store and in the record of any set: (settings digest, protocol, seed)."""
    overrides = (*cfg.common, *cfg.get("extra", []), *cfg.variants[job.variant])
    try:
        return settings_digest(tuple(overrides)), job.protocol, job.seed
    except HydraException as err:
        raise ValueError(f"variant {job.variant}: {list(overrides)} make no training config: {err}") from None


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
