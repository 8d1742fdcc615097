"""`cricket-attn-baselines`: the Hydra command over conf/baselines.yaml that runs
`cricket_attn.training.baselines.run_baselines` (every configured baseline fitted, paired with a transformer run
and logged)."""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from cricket_attn import progress, tracking
from cricket_attn.config import CONF_DIR
from cricket_attn.settings import SettingError
from cricket_attn.training.baselines import run_baselines


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="baselines")
def main(cfg: DictConfig) -> None:
    tracking.artifact_bars(progress.resolve() == "bar")
    try:
        run_baselines(cfg)
    except (SettingError, tracking.TrackingError) as err:  # one line, not a traceback
        print(f"cricket-attn-baselines: {err}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
