"""Every setting of a training run that can be checked before any work, so that a mistake costs seconds,
names the setting and leaves no MLflow run behind."""

from __future__ import annotations

import logging

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from cricket_attn import settings, tracking
from cricket_attn.config import project_path
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.data.features import innings_extent
from cricket_attn.data.sequences import QUANTILE_STEPS
from cricket_attn.data.sources import SourceError, configured_sources
from cricket_attn.data.splits import SeasonSplit, season_range
from cricket_attn.inference.probabilities import REACH
from cricket_attn.model import ConfigError, ModelConfig
from cricket_attn.training.restart import start_from

log = logging.getLogger(__name__)


def check_data_fits_model(d: pd.DataFrame, model: dict) -> None:
    """Fail at start-up, naming the setting, if the deliveries `d` reach further than the model's tables
    (`REACH`: deliveries, legal balls and overs in an innings, balls in an over; super overs left out)."""
    extent = innings_extent(d).max()
    for setting, column, what in REACH:
        if extent[column] > model[setting]:
            needed = int(extent[column])
            raise ConfigError(
                f"model.{setting}={model[setting]}: must be at least {needed} (the data has {needed} {what})"
            )


def preflight(cfg: DictConfig) -> None:
    """Every setting that can be checked before any work: a mistake costs seconds, names the setting
    and leaves no MLflow run behind. First what the config alone decides (the settings' types and ranges
    in cricket_attn.settings, the model's rules, the split's order), reading nothing; then the tracking
    store; then the data, read (from its cache) to check each split has deliveries and fits the model's
    tables. A resumed run gets the first part only (its command line may change some settings); its store
    and data were checked when it started."""
    try:
        settings.check(cfg, settings.TRAIN)
    except settings.SettingError as err:
        raise ConfigError(str(err)) from None
    stopper, saver = cfg.callbacks.get("early_stopping"), cfg.callbacks.model_checkpoint
    if stopper and saver.monitor != stopper.monitor:  # e.g. callbacks=[early_stopping,ema]: ema's default came last
        raise ConfigError(
            f"callbacks.model_checkpoint.monitor={saver.monitor}: must be early stopping's {stopper.monitor!r}, or "
            "the selection stops early but keeps its last epoch (in a list, early_stopping last: "
            "callbacks=[ema,early_stopping])"
        )
    if cfg.ensemble > 1 and not cfg.refit:
        log.warning("ensemble=%d has no effect with refit=false: the final model is the selected epoch's", cfg.ensemble)
    # The model's own checks, with stand-ins for the sizes the data gives it.
    stand_in = {
        "n_numeric": 1,
        "n_batters": 1,
        "n_bowlers": 1,
        "n_venues": 1,
        "n_competitions": 1,
        "n_team_types": 1,
        "numeric_quantiles": [[0.0] * (QUANTILE_STEPS + 1)],
    }
    model = OmegaConf.to_container(cfg.model, resolve=True)
    ModelConfig.from_dict({**stand_in, **model})
    try:  # their messages start with the setting's name within data: `split: ...`, `phases: ...`
        split = SeasonSplit.from_config(OmegaConf.to_container(cfg.data.split, resolve=True))
        phases = PhaseRules.from_config(OmegaConf.to_container(cfg.data.phases, resolve=True))
    except ValueError as err:
        raise ConfigError(f"data.{err}") from None
    if cfg.resume:
        return
    start_from(cfg)  # an earlier run to start from, with a selected model, before any data is read
    if cfg.refit:
        start_from(cfg, 0)  # and, for the refit, its refit members (a selection-only run has none)
    if cfg.get("logger"):
        tracking.check_tracking_uri(cfg.logger.tracking_uri)  # an unreachable store fails first, in seconds
    try:
        tables = load_tables(configured_sources(cfg.data.sources), phases, project_path(cfg.data.data_dir))
    except SourceError as err:
        raise ConfigError(f"data.sources: {err}") from None
    if tables.deliveries.empty:
        found = (
            f"{len(tables.skipped)} file(s) skipped, first: {tables.skipped[0].reason}"
            if tables.skipped
            else "no match file with deliveries"
        )
        raise ConfigError(f"data.sources: nothing to train on in {', '.join(tables.sources)}: {found}")
    parts = split.split(tables.deliveries)
    for name, key in (("train", "train_until"), ("validation", "validation"), ("test", "test")):
        if parts[name].empty:
            have = season_range(tables.deliveries)
            raise ConfigError(
                f"data.split.{key}={OmegaConf.to_container(cfg.data.split)[key]}: no deliveries in the "
                f"{name} seasons (the data has seasons {have})"
            )
    for name in cfg.data.get("train_competitions") or []:
        for part, seasons in (("train", "training"), ("validation", "validation")):
            if not (parts[part]["competition"] == name).any():
                known = ", ".join(parts[part]["competition"].astype(str).value_counts().index[:5])
                raise ConfigError(
                    f"data.train_competitions: {name!r} has no deliveries in the {seasons} seasons "
                    f"(the most frequent there: {known})"
                )
    check_data_fits_model(tables.deliveries, model)
