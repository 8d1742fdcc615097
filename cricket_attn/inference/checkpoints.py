"""Checkpoints as plain files: the trained model read back for scoring and simulation, and the final
model written, with torch alone (no Lightning: a command that only scores starts seconds sooner).

A checkpoint holds plain Python and tensors: `hyper_parameters` (the model's settings under `model`),
`state_dict` (the model's weights under `model.`), the fitted data encoder under `CricketDataModule`,
for an ensemble its other members as `ensemble_members`, and its layout's version as `cricket_attn_format`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from cricket_attn.atomic import atomic_path
from cricket_attn.model import ConfigError, CricketTransformer, Ensemble, ModelConfig

PREFIX = "model."  # the weights' keys in a checkpoint: the LightningModule's `model`
# The layout of a checkpoint this version writes and reads, under FORMAT_KEY: raise it when the model's
# settings, the weights' names or the stored encoder change so that an older checkpoint would not load as
# it was trained. An older one is refused in one line naming its format; there are no readers of old ones.
FORMAT, FORMAT_KEY = 2, "cricket_attn_format"  # 2: the encoder keeps `trained_until` (2026-11-28)


class CheckpointError(ValueError):
    """A checkpoint that is missing, not ours, or made with settings this model cannot take."""


def read(path: str | Path) -> dict:
    """The raw checkpoint, with one clear error if the file is missing, unreadable or not ours."""
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"{path}: is a folder, not a checkpoint file (a .ckpt; or an MLflow model URI)")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # any unreadable file gets the same one-line answer
        raise CheckpointError(f"{path}: not a readable PyTorch checkpoint ({type(err).__name__})") from None
    model_cfg = ckpt.get("hyper_parameters", {}).get("model") if isinstance(ckpt, dict) else None
    if model_cfg is None or "state_dict" not in ckpt:
        raise CheckpointError(f"{path}: not a cricket_attn checkpoint (no model settings inside)")
    check_format(ckpt, path)
    return ckpt


def check_format(ckpt: dict, path: str | Path) -> None:
    """A checkpoint of another layout than this version's (FORMAT) refused in one line that names it."""
    if (version := ckpt.get(FORMAT_KEY)) != FORMAT:
        written = "no format (written before 2026-11-27)" if version is None else f"format {version}"
        raise CheckpointError(
            f"{path}: a checkpoint of {written}; this version of cricket_attn reads format {FORMAT} only: "
            "train the model again with this version, into a new folder (make leagues: LEAGUES=<another folder>, or "
            "delete the old stage's folder; a run resumed: start it afresh)"
        )


def check_fits(here: dict, state: object, cfg: ModelConfig) -> None:
    """Before any weights are copied: weights `state` that do not fit a model's own (`here`, the same
    keys) get one line naming the settings and the first parameter that differs, not a page of shape
    errors."""
    if not isinstance(state, dict):
        raise CheckpointError("not a cricket_attn checkpoint (no model settings inside)")
    problems = [
        f"{k} is {list(v.shape)} in the checkpoint but {list(here[k].shape)} here"
        for k, v in state.items()
        if k in here and v.shape != here[k].shape
    ]
    problems += [f"{k} is missing from the checkpoint" for k in here if k not in state]
    problems += [f"{k} is in the checkpoint but not in this model" for k in state if k not in here]
    if problems:
        raise CheckpointError(
            f"checkpoint does not fit model settings d_model={cfg.d_model}, n_layers={cfg.n_layers}, "
            f"positional_parts={list(cfg.positional_parts)}: "
            f"{problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        )


def model_from(ckpt: dict) -> CricketTransformer:
    """One member's model, in eval mode, from its settings and weights."""
    model = CricketTransformer(ModelConfig.from_dict(ckpt["hyper_parameters"]["model"]))
    state = {k.removeprefix(PREFIX): v for k, v in ckpt["state_dict"].items()}
    check_fits(model.state_dict(), state, model.cfg)
    model.load_state_dict(state)
    return model.eval()


def load_model(path: str | Path) -> tuple[CricketTransformer | Ensemble, dict]:
    """The model to score with (in eval mode): the checkpoint's model, or the ensemble of its members;
    and the raw checkpoint."""
    ckpt = read(path)
    try:
        members = [model_from(ckpt)]
    except (ConfigError, TypeError) as err:
        raise CheckpointError(f"{path}: its settings do not fit this version's model: {err}") from None
    except CheckpointError as err:
        raise CheckpointError(f"{path}: {err}") from None
    for i, member in enumerate(ckpt.get("ensemble_members", []), start=2):
        try:
            members.append(model_from(member))
        except (ConfigError, TypeError, KeyError, CheckpointError) as err:
            raise CheckpointError(f"{path}: ensemble member {i} does not load: {err}") from None
    return (members[0] if len(members) == 1 else Ensemble(members).eval()), ckpt


def save_final(paths: list[str | Path], calibration: dict | None, out: str | Path) -> Path:
    """The final model as one checkpoint, written atomically to `out`: the first of `paths`, with the
    others as ensemble members (their probabilities are averaged), each with the `calibration` fitted on
    the validation season outside training, if given (its `temperature` divides the logits, its
    `wicket_offset` is added to the wicket's)."""
    ckpts = [torch.load(p, map_location="cpu", weights_only=True) for p in paths]
    if any(c.get("CricketDataModule") != ckpts[0].get("CricketDataModule") for c in ckpts[1:]):
        raise CheckpointError(f"{paths}: ensemble members were fitted with different data encoders")
    if calibration is not None:
        for ckpt in ckpts:
            for key in ("temperature", "wicket_offset"):
                ckpt["hyper_parameters"]["model"][key] = float(calibration[key])
    final = ckpts[0]
    if len(ckpts) > 1:
        final["ensemble_members"] = [
            {"hyper_parameters": c["hyper_parameters"], "state_dict": c["state_dict"]} for c in ckpts[1:]
        ]
    with atomic_path(out) as tmp:
        torch.save(final, tmp)
    return Path(out)
