"""`cricket-attn-train`: the Hydra command over conf/ that runs `cricket_attn.training.train.train_job`.

Hydra composes the config and answers `--help`, `--cfg job` and a mistyped setting before this function
runs, so the training stack (torch, Lightning, MLflow: some ten seconds to import) is imported only once
there is a run to start.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from cricket_attn.config import CONF_DIR


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> float:
    """The selection stage's validation log loss (`train_job`): what a sweeper minimises. A run stopped by
    Ctrl-C or SIGTERM says in one line how it continues, with exit status 130 (a sweep stops with it)."""
    from cricket_attn.training.train import train_job

    try:
        return train_job(cfg)
    except KeyboardInterrupt as stop:
        print(f"cricket-attn-train: {stopped(cfg, stop)}", file=sys.stderr)
        raise SystemExit(130) from None


def stopped(cfg: DictConfig, stop: KeyboardInterrupt) -> str:
    """What a stopped run says: how it stopped, and the command that continues it (once it has a run file)."""
    from cricket_attn.tracking import RUN_FILE

    folder = Path(cfg.resume or cfg.paths.output_dir).resolve()
    how = str(stop) or "interrupted"
    if not (folder / RUN_FILE).is_file():
        return f"{how} before the run began; nothing to resume"
    return f"{how}; it continues with: cricket-attn-train resume={folder}"


if __name__ == "__main__":
    main()
