"""`cricket-attn-ablate`: train what the record and the store lack, record it, write and log the report."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobStatus
from omegaconf import DictConfig

from cricket_attn import settings, tracking
from cricket_attn.atomic import atomic_path
from cricket_attn.config import CONF_DIR
from cricket_attn.training.ablation.jobs import job_folder, plan
from cricket_attn.training.ablation.launch import launch, launcher_overrides
from cricket_attn.training.ablation.record import recorded_runs
from cricket_attn.training.ablation.report import comparisons, log_report, report

log = logging.getLogger(__name__)


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
