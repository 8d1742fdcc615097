"""`cricket-attn-train`: the Hydra command over conf/ that runs `cricket_attn.training.train.train`.

Hydra composes the config and answers `--help`, `--cfg job` and a mistyped setting before this function
runs, so the training stack (torch, Lightning, MLflow: some ten seconds to import) is imported only once
there is a run to start.
"""

from __future__ import annotations

import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from cricket_attn.config import CONF_DIR


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> float:
    """Returns the selection stage's validation log loss, after the calibration the final model gets
    (`calibrate=true`), else its best: what a sweeper (Optuna) minimises. Never the test's, so a
    search cannot choose its settings on the test seasons."""
    from cricket_attn import progress, tracking
    from cricket_attn.model import ConfigError
    from cricket_attn.training.restart import resume_config
    from cricket_attn.training.train import train

    try:
        tracking.artifact_bars(cfg.progress == "bar" or (cfg.progress == "auto" and progress.resolve() == "bar"))
        if cfg.resume:  # the run's own config, with what this command line changes
            cfg = resume_config(cfg, list(HydraConfig.get().overrides.task))
        results = train(cfg)
    except (ConfigError, tracking.TrackingError, tracking.ResumeError, FileNotFoundError) as err:  # one line
        print(f"cricket-attn-train: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    best_val = results.get("calibration/val_log_loss_after", results.get("selection/best_val_loss"))
    return float("nan") if best_val is None else float(best_val)


if __name__ == "__main__":
    main()
