"""`cricket-attn-train`: the Hydra command over conf/ that runs `cricket_attn.training.train.train_job`.

Hydra composes the config and answers `--help`, `--cfg job` and a mistyped setting before this function
runs, so the training stack (torch, Lightning, MLflow: some ten seconds to import) is imported only once
there is a run to start.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from cricket_attn.config import CONF_DIR


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> float:
    """The selection stage's validation log loss (`train_job`): what a sweeper minimises."""
    from cricket_attn.training.train import train_job

    return train_job(cfg)


if __name__ == "__main__":
    main()
