"""Weight averaging: the model validated, checkpointed and kept at the end of a fit is an exponential
moving average of its weights over the last steps (Lightning's `EMAWeightAveraging`), not the last step's.
A single epoch's weights move the validation loss by chance, and the epoch count chosen on that noisy curve
moved a run by 0.004 nats a ball (docs/log/2026-11-25.md, "the season back on today's code"); an average
over the last part of an epoch is steadier. The average's memory is set in epochs, so one setting means the
same on the IPL's ~140 optimiser steps an epoch as on every league's ~900.
"""

from __future__ import annotations

import pytorch_lightning as pl
from pytorch_lightning.callbacks import EMAWeightAveraging
from torch.optim.swa_utils import get_ema_avg_fn


def ema_decay(half_life_epochs: float, steps_per_epoch: int) -> float:
    """The per-step decay under which a step's weight in the average halves after `half_life_epochs` epochs."""
    return 0.5 ** (1.0 / (half_life_epochs * max(steps_per_epoch, 1)))


class EpochEMA(EMAWeightAveraging):
    """An exponential moving average of the weights whose half-life is given in epochs. Only parameters are
    averaged (the model's buffers are fixed tables); Lightning swaps the average in for validation, saves it
    as the checkpoint's weights (the live ones beside it, so a resumed fit continues both) and leaves it in
    the model when the fit ends."""

    def __init__(self, half_life_epochs: float = 0.25):
        if not half_life_epochs > 0:
            raise ValueError(f"callbacks.weight_averaging.half_life_epochs must be above 0, got {half_life_epochs}")
        super().__init__(use_buffers=False)
        self.half_life_epochs = float(half_life_epochs)

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage == "fit":
            steps = int(trainer.estimated_stepping_batches) // max(int(trainer.max_epochs or 1), 1)
            self._kwargs["avg_fn"] = get_ema_avg_fn(decay=ema_decay(self.half_life_epochs, steps))
        super().setup(trainer, pl_module, stage)
