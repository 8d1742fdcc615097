"""The LightningModule: builds the model from plain settings, computes the loss and metrics,
and configures the optimiser. Checkpoints hold only plain Python and tensors (cricket_attn.inference.checkpoints
reads them back for scoring without Lightning). Also what a fit shows
while it runs (a line or a bar per epoch, cricket_attn.progress)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from pytorch_lightning.callbacks import TQDMProgressBar
from torchmetrics.classification import MulticlassAccuracy, MulticlassCalibrationError

from cricket_attn import progress
from cricket_attn.data.batches import IGNORE
from cricket_attn.inference.checkpoints import FORMAT, FORMAT_KEY, CheckpointError, check_fits, check_format, read
from cricket_attn.model import ConfigError, CricketTransformer, ModelConfig

log = logging.getLogger(__name__)


class BallOutcomeModule(pl.LightningModule):
    def __init__(
        self,
        model: dict,
        lr: float = 1e-3,  # conf/config.yaml's optim (tests/test_config.py holds them equal)
        weight_decay: float = 0.3,
        warmup_steps: int = 100,
        min_lr_ratio: float = 0.05,
        betas: tuple[float, float] = (0.9, 0.98),
    ):
        super().__init__()
        self.save_hyperparameters(logger=False)  # the run logs its whole config once (cricket_attn.tracking)
        self.model = CricketTransformer(ModelConfig.from_dict(dict(model)))
        n = self.model.cfg.n_classes
        self.metrics = torch.nn.ModuleDict(
            {
                f"{split}_{name}": metric
                for split in ("val", "test")
                for name, metric in (
                    ("accuracy", MulticlassAccuracy(n, average="micro")),
                    ("ece", MulticlassCalibrationError(n, n_bins=15, norm="l1")),
                )
            }
        )

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.model(batch)

    def compile_model(self) -> None:
        """`torch.compile` the transformer in place (conf/config.yaml's `compile`): its weights, state dict and
        checkpoints are unchanged. Innings differ in length from batch to batch, so its shapes are dynamic."""
        self.model.compile(dynamic=True)

    def _loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, int]:
        logits = self.model(batch)  # (B, T, n_classes)
        target = batch["outcome"]
        real = target != IGNORE
        n = int(real.sum())
        if not self.training:  # validation and test: the outcomes alone
            return F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=IGNORE), logits, n
        if "soft_target" in batch:  # outcomes mixed with a teacher's probabilities (data.teacher)
            per_ball = -(batch["soft_target"] * logits.log_softmax(-1)).sum(-1)
        else:
            per_ball = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=IGNORE, reduction="none")
        # Recency weights (data.season_half_life) are 0 on padding, like `real`.
        weight = batch["weight"] if "weight" in batch else real.to(logits.dtype)
        return (per_ball * weight).sum() / max(n, 1), logits, n

    def training_step(self, batch, batch_idx):
        loss, _, n = self._loss(batch)
        self.log("train/loss", loss, on_step=False, on_epoch=True, batch_size=n)
        if self.trainer.progress_bar_callback is not None:  # the running loss on the bar, only where there is one
            self.log("loss", loss, on_step=True, on_epoch=False, prog_bar=True, logger=False, batch_size=n)
        return loss

    def _eval_step(self, batch, split: str):
        loss, logits, n = self._loss(batch)
        self.log(f"{split}/loss", loss, on_epoch=True, batch_size=n, prog_bar=True)
        real = batch["outcome"] != IGNORE
        probs, target = logits[real].softmax(-1), batch["outcome"][real]
        for name in ("accuracy", "ece"):
            metric = self.metrics[f"{split}_{name}"]
            metric.update(probs, target)
            self.log(f"{split}/{name}", metric, on_epoch=True, batch_size=n)

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, "test")

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(
            parameter_groups(self, self.hparams.weight_decay), lr=self.hparams.lr, betas=tuple(self.hparams.betas)
        )
        total = max(int(self.trainer.estimated_stepping_batches), 1)
        warmup, floor = self.hparams.warmup_steps, self.hparams.min_lr_ratio

        def schedule(step: int) -> float:
            # Linear warm-up, then cosine decay to `min_lr_ratio` of the peak.
            if step < warmup:
                return (step + 1) / warmup
            progress = min((step - warmup) / max(total - warmup, 1), 1.0)
            return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint[FORMAT_KEY] = FORMAT  # the layout's version, which a later version reads or refuses

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        if "hyper_parameters" not in checkpoint:
            raise CheckpointError("not a cricket_attn checkpoint (no model settings inside)")
        check_format(checkpoint, "the checkpoint")
        check_fits(self.state_dict(), checkpoint.get("state_dict"), self.model.cfg)


def parameter_groups(module: torch.nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: weight decay on matrices (embedding tables included) only; biases and norms are left alone."""
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    keep = [p.dim() >= 2 for _, p in named]
    return [
        {"params": [p for (_, p), k in zip(named, keep) if k], "weight_decay": weight_decay},
        {"params": [p for (_, p), k in zip(named, keep) if not k], "weight_decay": 0.0},
    ]


def _module_from(ckpt: dict) -> BallOutcomeModule:
    module = BallOutcomeModule(**ckpt["hyper_parameters"])
    module.on_load_checkpoint(ckpt)
    module.load_state_dict(ckpt["state_dict"])
    return module.eval()


def load_checkpoint(path: str | Path) -> tuple[BallOutcomeModule, dict]:
    """The trained LightningModule (in eval mode) and the raw checkpoint, with one clear error if it cannot
    be. Of an ensemble checkpoint, the module is its first member (scoring takes `checkpoints.load_model`)."""
    ckpt = read(path)
    try:
        return _module_from(ckpt), ckpt
    except (ConfigError, TypeError) as err:
        raise CheckpointError(f"{path}: its settings do not fit this version's model: {err}") from None
    except CheckpointError as err:
        raise CheckpointError(f"{path}: {err}") from None


class EpochLines(pl.Callback):
    """One log line per epoch: the stage, the epoch, the training and validation losses, the time."""

    def __init__(self, stage: str):
        self.stage = stage
        self.best: float | None = None
        self.clock = progress.Stopwatch()

    def on_train_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        self.clock = progress.Stopwatch()

    def on_train_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.global_rank != 0:
            return
        metrics = trainer.callback_metrics
        parts = [f"{self.stage} epoch {trainer.current_epoch + 1}/{trainer.max_epochs}"]
        if "train/loss" in metrics:
            parts.append(f"train loss {float(metrics['train/loss']):.4f}")
        if "val/loss" in metrics:
            val = float(metrics["val/loss"])
            new_best = self.best is None or val < self.best
            self.best = val if new_best else self.best
            parts.append(f"val loss {val:.4f}" + (" (best so far)" if new_best else f" (best {self.best:.4f})"))
        log.info("%s, %s", ", ".join(parts), self.clock)


class StageBar(TQDMProgressBar):
    """Lightning's bar, each epoch's kept on screen and named after the stage: `refit 2/3 epoch 4/7`."""

    def __init__(self, stage: str):
        super().__init__(leave=True)
        self.stage = stage

    def on_train_epoch_start(self, trainer: pl.Trainer, *args) -> None:
        super().on_train_epoch_start(trainer, *args)
        self.train_progress_bar.set_description(f"{self.stage} epoch {trainer.current_epoch + 1}/{trainer.max_epochs}")


def progress_callbacks(stage: str, mode: str = "auto") -> tuple[list[pl.Callback], bool]:
    """The callbacks that show a Lightning fit's progress, and the Trainer's `enable_progress_bar`."""
    shown = progress.resolve(mode)
    if shown == "bar":
        return [StageBar(stage)], True
    if shown == "lines":
        return [EpochLines(stage)], False
    return [], False
