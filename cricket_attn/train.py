"""`cricket-attn-train`: a Hydra app over conf/ that fits the transformer and tests it.

Protocol: fit on the training seasons with early stopping on the validation season (that chooses the
number of epochs); with `refit=true`, train a fresh model on training + validation seasons for that
many epochs; then score the test seasons, which nothing before has touched.
"""

from __future__ import annotations

from pathlib import Path

import hydra
import pytorch_lightning as pl
import torch
from omegaconf import DictConfig, OmegaConf

from cricket_attn.config import CONF_DIR
from cricket_attn.datamodule import CricketDataModule
from cricket_attn.lit_module import BallOutcomeModule
from cricket_attn.model import ConfigError


def check_data_fits_model(dm: CricketDataModule, model: dict) -> None:
    """Fail at start-up, naming the setting, if the data is larger than the model's tables."""
    d = dm.tables.deliveries
    limits = [("model.max_len", dm.max_len(), model["max_len"], "deliveries in one sequence"),
              ("model.max_balls", int(d["legal_ball_index"].max()) + 1, model["max_balls"], "legal balls in an innings"),
              ("model.max_overs", int(d["over"].max()) + 1, model["max_overs"], "overs in an innings"),
              ("model.max_ball_in_over", int(d["ball_in_over"].max()), model["max_ball_in_over"], "balls in an over")]
    for setting, needed, have, what in limits:
        if needed > have:
            raise ConfigError(f"{setting}={have} is too small: the data has {needed} {what}")


def fit_stage(cfg: DictConfig, dm: CricketDataModule, callbacks: dict, max_epochs: int | None = None):
    dm.prepare_data()
    dm.setup("fit")
    model = {**dm.encoder.model_dims(), **OmegaConf.to_container(cfg.model, resolve=True)}
    check_data_fits_model(dm, model)
    module = BallOutcomeModule(model, **OmegaConf.to_container(cfg.optim, resolve=True))
    kwargs = {"callbacks": list(callbacks.values())}
    if max_epochs is not None:
        kwargs["max_epochs"] = max_epochs
    trainer = hydra.utils.instantiate(cfg.trainer, **kwargs)
    trainer.fit(module, dm)
    return trainer, module


def train(cfg: DictConfig) -> dict[str, float]:
    """Fit, optionally refit, test. Returns the test metrics."""
    pl.seed_everything(cfg.seed, workers=True)
    callbacks = {name: hydra.utils.instantiate(c) for name, c in cfg.callbacks.items()}
    dm = hydra.utils.instantiate(cfg.data)
    trainer, module = fit_stage(cfg, dm, callbacks)
    ckpt = callbacks["model_checkpoint"]
    # Epochs to the best validation loss, as the checkpoint records them (not parsed from its file name).
    best_epoch = None
    if ckpt.best_model_path:
        best_epoch = int(torch.load(ckpt.best_model_path, map_location="cpu", weights_only=True)["epoch"]) + 1
    results = {"selection/best_val_loss": float(ckpt.best_model_score) if ckpt.best_model_score is not None else None,
               "selection/epochs": best_epoch}
    if cfg.refit and best_epoch:
        # Second stage: the same recipe on training + validation seasons, for the chosen epoch count.
        pl.seed_everything(cfg.seed, workers=True)
        refit_dm = hydra.utils.instantiate(cfg.data, refit=True)
        refit_ckpt = hydra.utils.instantiate(cfg.callbacks.model_checkpoint, monitor=None,
                                             dirpath=str(Path(ckpt.dirpath) / "refit"), filename="refit-{epoch:02d}")
        trainer, module = fit_stage(cfg, refit_dm, {"model_checkpoint": refit_ckpt}, max_epochs=best_epoch)
        tested = trainer.test(module, refit_dm, verbose=False)
        results["checkpoint"] = refit_ckpt.last_model_path or refit_ckpt.best_model_path
    else:
        tested = trainer.test(module, dm, ckpt_path=ckpt.best_model_path or None, verbose=False)
        results["checkpoint"] = ckpt.best_model_path
    results.update({k: float(v) for k, v in tested[0].items()})
    for key, value in results.items():
        print(f"{key}: {value}")
    return results


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> float:
    return train(cfg)["test/loss"]


if __name__ == "__main__":
    main()
