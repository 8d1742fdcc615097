"""Where a training stage starts: a stopped run resumed (`resume=<output folder>`: its own config with what
the new command line may change, and the checkpoint each stage continues from), or an earlier run's model
to start from (`init_from=<output folder>`, as `make leagues`' fine-tune starts from the pooled model).

Both are checked before any data is read: a damaged checkpoint, another checkpoint layout, other data
settings or another model shape is one line naming the setting.
"""

from __future__ import annotations

import glob
import logging
from pathlib import Path

import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from cricket_attn import tracking
from cricket_attn.data.datamodule import CricketDataModule, encoder_settings
from cricket_attn.inference.checkpoints import CheckpointError, check_format
from cricket_attn.model import ConfigError
from cricket_attn.training.lit_module import BallOutcomeModule, load_checkpoint

log = logging.getLogger(__name__)

# Model settings that change no weight's shape: a run may start from a model that had others.
UNSHAPED = ("dropout", "entity_dropout", "context")


def list_or_value(value):
    return list(value) if isinstance(value, (list, tuple)) else value


def start_from(cfg: DictConfig, member: int | None = None) -> str | None:
    """With `init_from`, the checkpoint a stage starts from: the earlier run's selected model (member
    None) or its refit member `member` (counted from 0, around again if it has fewer); None without."""
    if not cfg.get("init_from"):
        return None
    try:
        state = tracking.read_run_file(cfg.init_from)
    except (FileNotFoundError, tracking.ResumeError) as err:
        raise ConfigError(f"init_from={cfg.init_from}: {str(err).split(': ', 1)[-1]}") from None
    members = state.get("refit_members") or [None]
    path = state.get("selection_checkpoint") if member is None else members[member % len(members)]
    if not path:
        what = "selected model (its selection stage never finished)" if member is None else "refit member"
        raise ConfigError(f"init_from={cfg.init_from}: that run has no {what} to start from")
    if not Path(path).is_file():
        raise ConfigError(f"init_from={cfg.init_from}: its checkpoint {path} is missing")
    ckpt, damage = loaded(Path(path))
    if damage:
        raise ConfigError(f"init_from={cfg.init_from}: its checkpoint {path} is damaged ({damage})")
    try:
        check_format(ckpt, path)  # one of another version's layout: refused here, not after the data
    except CheckpointError as err:
        raise ConfigError(f"init_from={cfg.init_from}: {err}") from None
    # Its data settings, in its run file: another encoder is refused before any data is read (the encoder
    # itself is compared again when the weights load).
    ours = encoder_settings(OmegaConf.to_container(cfg.data, resolve=True))
    for key, value in (state.get("data") or {}).items():
        if value != ours[key]:
            raise ConfigError(
                f"init_from={cfg.init_from}: that run has data.{key}={value}, this one {ours[key]}; a run "
                "starts only from one whose encoder was fitted from the same data settings"
            )
    # Its model's settings, in the checkpoint: a shape of its own is refused before any data is read (what
    # the data sizes, vocabularies and rates, is compared when the weights load; dropout may differ).
    theirs = ckpt.get("hyper_parameters", {}).get("model", {})
    ours = OmegaConf.to_container(cfg.model, resolve=True)
    shaped = [k for k, v in ours.items() if k not in UNSHAPED and v is not None and k in theirs]
    for key in sorted(k for k in shaped if list_or_value(theirs[k]) != list_or_value(ours[k])):
        raise ConfigError(
            f"init_from={cfg.init_from}: that run's model has model.{key}={theirs[key]}, this one {ours[key]}; "
            "a run starts only from a model of its own shape"
        )
    return path


def load_start(module: BallOutcomeModule, dm: CricketDataModule, path: str) -> None:
    """Give `module` the weights of the checkpoint `path`, which must have been fitted with the same
    encoder (vocabularies, rates and scaling): the same data, split and data settings."""
    source, ckpt = load_checkpoint(path)
    if not dm.same_encoder(ckpt.get("CricketDataModule")):
        raise ConfigError(
            f"init_from: {path} was fitted with another encoder; its run must have the same data.sources, "
            "data.split and the data settings that shape the features (min_count, rate_strength, history_balls, ...)"
        )
    try:
        module.model.load_state_dict(source.model.state_dict())
    except RuntimeError as err:
        raise ConfigError(f"init_from: {path} has another model shape ({str(err).splitlines()[-1].strip()})") from None
    log.info("init_from: starting from %s", path)


def loaded(path: Path) -> tuple[dict | None, str | None]:
    """The checkpoint at `path` read once, or why it cannot be (a kill while it was written truncates it)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True), None
    except Exception as err:  # torch says a truncated file in several ways: each is a damaged checkpoint
        said = str(err).strip().splitlines()[0].split(". ")[0] if str(err).strip() else "unreadable"
        return None, f"{type(err).__name__}: {said}"


def unreadable(path: Path) -> str | None:
    """Why `path` cannot be resumed from, or None if it can."""
    return loaded(path)[1]


def resume_from(saver: pl.callbacks.ModelCheckpoint) -> str | None:
    """The checkpoint a resumed stage continues from: the `last.ckpt` of its checkpoint callback (None if
    there is none yet); if that is damaged, the callback's newest other checkpoint (a best epoch), with the
    damaged file moved aside to `last.ckpt.damaged`; if there is none, a ResumeError saying so."""
    folder = Path(saver.dirpath)
    last = folder / f"{saver.CHECKPOINT_NAME_LAST}{saver.FILE_EXTENSION}"
    if not last.is_file():
        return None
    damage = unreadable(last)
    if damage is None:
        return str(last)
    prefix = glob.escape((saver.filename or "").split("{")[0])  # best-{epoch:02d}: best-*.ckpt, not calibrated.ckpt
    earlier = [p for p in folder.glob(f"{prefix}*{saver.FILE_EXTENSION}") if p != last]
    for path in sorted(earlier, key=lambda p: p.stat().st_mtime, reverse=True):
        if unreadable(path) is None:
            log.warning("resume: %s is damaged (%s); continuing from the earlier %s", last, damage, path.name)
            last.replace(last.with_name(last.name + ".damaged"))  # Lightning writes a new last.ckpt
            return str(path)
    raise tracking.ResumeError(
        f"{last} is damaged ({damage}) and the run has no earlier checkpoint: start a new run, or restore the file"
    )


def selection_done(state: dict, cfg: DictConfig) -> bool:
    """Whether a resumed run's selection stage is over, so that it is not set up and fitted again: it kept a
    model, and early stopping ended it, its refit began, or it trained every epoch of the `trainer.max_epochs`
    this resume still gives (a larger one continues it; a fit cut short by `max_steps` or `max_time` is not
    over)."""
    if not state.get("selection_checkpoint"):
        return False
    ran_to = state.get("selection_ran_to")
    return bool(state.get("selection_final")) or (ran_to is not None and ran_to == cfg.trainer.get("max_epochs"))


def finished_as(cfg: DictConfig) -> dict:
    """What a finished run was finished with, of the settings a resume may change that would train it further."""
    return {"max_epochs": cfg.trainer.get("max_epochs"), "refit": bool(cfg.refit), "ensemble": int(cfg.ensemble)}


# What a resumed run may not change: they fix the model's shape, the data and its split, and what the
# protocol chose from them. Anything else (trainer.max_epochs, progress, the tracking of the model) may, and
# a run of the selection stage alone (refit=false) may be continued to its refit with refit=true (and any
# refit_from, refit_epochs).
FIXED_ON_RESUME = ("model.", "data.", "optim.", "seed", "refit", "calibrate", "paths.", "init_from")
REFIT_SETTINGS = ("refit", "refit_from", "refit_epochs")  # a selection-only run's resume may set them


def resume_config(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """The config of the run in `cfg.resume` (its `.hydra/config.yaml`) with `overrides`, the settings
    given on this command line, applied; one that cannot change mid-run is a ConfigError naming it."""
    folder = Path(cfg.resume).resolve()
    saved = folder / ".hydra" / "config.yaml"
    if not saved.is_file():
        raise ConfigError(
            f"resume={cfg.resume}: no .hydra/config.yaml there; give the output folder of an earlier "
            "cricket-attn-train run"
        )
    run_cfg = OmegaConf.load(saved)
    given = [o for o in overrides if not o.lstrip("+~").startswith(("resume=", "hydra."))]
    for override in given:
        key = override.lstrip("+~").split("=", 1)[0]
        if key in REFIT_SETTINGS and not run_cfg.get("refit"):
            continue  # a run of the selection stage alone, continued to its refit (it chose what the refit needs)
        if key.startswith(FIXED_ON_RESUME) or key in (k.rstrip(".") for k in FIXED_ON_RESUME):
            raise ConfigError(
                f"resume: {key} cannot change in a resumed run (it fixes the model, the data, the "
                f"split or what was chosen from them); the run has {key}="
                f"{OmegaConf.select(run_cfg, key, default='(not set)')}"
            )
    # A config group chosen on this command line (`callbacks=ema`, `trainer=gpu`) is taken as this command
    # composed it, not as the text of its name.
    groups = {
        key
        for key in (o.lstrip("+~").split("=", 1)[0] for o in given)
        if "." not in key and isinstance(OmegaConf.select(cfg, key, default=None), DictConfig)
    }
    plain = [o for o in given if o.lstrip("+~").split("=", 1)[0] not in groups]
    merged = OmegaConf.merge(run_cfg, OmegaConf.from_dotlist(plain))
    with open_dict(merged):
        for key in groups:
            merged[key] = cfg[key]
        merged.resume = str(folder)
    return merged
