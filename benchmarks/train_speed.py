"""Training throughput (deliveries per second) and peak memory of the transformer as conf/ configures it.

Usage: python benchmarks/train_speed.py [--epochs 2 | --validate] [--set context] [--variant 'NAME=OVERRIDE ...']
    [OVERRIDE ...]

Each variant is the default configuration (conf/config.yaml) with its overrides, timed in the same run:
`--set NAME` takes the variants of conf/ablation_set/NAME.yaml (e.g. `context`: players' histories and
the first innings against the default), `--variant` adds one
(`--variant 'k64=data.history_balls=64 model.history_roles=[batter]'`), and with neither only the
default is timed. Trailing overrides apply to every variant (a variant's own come after them and win), e.g. on a GPU
`trainer=gpu data.batch_size=64`.

Times `Trainer.fit` over the selection stage's training seasons with validation off, so the number is
training alone (the data set-up, teacher included, comes before the clock starts). With `--validate` each
variant is the whole selection stage instead (the trainer's max_epochs, or fewer with early stopping, and
weight averaging where configured): the table adds its best validation
loss (uncalibrated) and epoch, and the time includes the validation passes; how a batch size on a GPU
trains, not only how fast (a fresh model each time: `init_from` is not read, so a fine-tune is not
timed). The peak RSS column is the process's peak so far, so only its growth down the table says
anything. Prints a table last.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time

import hydra
import pytorch_lightning as pl
import torch
from hydra import compose, initialize_config_dir
from machine import cpu
from omegaconf import OmegaConf

from cricket_attn.config import CONF_DIR
from cricket_attn.training.lit_module import BallOutcomeModule


def variants(args) -> dict[str, list[str]]:
    found = {"default": []}
    if args.set:
        found.update(OmegaConf.to_container(OmegaConf.load(CONF_DIR / "ablation_set" / f"{args.set}.yaml").variants))
    for spec in args.variant:
        name, _, overrides = spec.partition("=")
        found[name] = overrides.split()
    return found


class Deliveries(pl.Callback):
    """Counts the real (unpadded) deliveries of the batches trained on, and the batches (optimiser steps)."""

    def __init__(self):
        self.count = self.steps = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.count += int(batch["mask"].sum())
        self.steps += 1


class ValidationLosses(pl.Callback):
    """Each validation's loss (with weight averaging, the averaged weights') and its epoch (from 1; with
    `check_val_every_n_epoch` above 1 not every epoch has one), in order."""

    def __init__(self):
        self.seen: list[tuple[float, int]] = []

    def on_validation_epoch_end(self, trainer, module):
        if not trainer.sanity_checking and "val/loss" in trainer.callback_metrics:
            self.seen.append((float(trainer.callback_metrics["val/loss"]), trainer.current_epoch + 1))


def time_training(overrides: list[str], epochs: int | None) -> dict:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"), tempfile.TemporaryDirectory() as tmp:
        cfg = compose(config_name="config", overrides=[f"paths.output_dir={tmp}", *overrides])
        return _time(cfg, epochs)


def _time(cfg, epochs: int | None) -> dict:
    """`epochs` of training alone, or (None) the selection stage with its callbacks."""
    pl.seed_everything(cfg.seed)
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("fit")
    model = {**dm.encoder.model_dims(), **OmegaConf.to_container(cfg.model, resolve=True)}
    module = BallOutcomeModule(model, **OmegaConf.to_container(cfg.optim, resolve=True))
    if cfg.compile:
        module.compile_model()
    counted = Deliveries()
    # the selection stage: every configured callback (weight averaging too) but the checkpoints
    staged = (
        [hydra.utils.instantiate(c) for n, c in cfg.callbacks.items() if c and n != "model_checkpoint"]
        if epochs is None
        else []
    )
    losses = ValidationLosses()
    limits = {} if epochs is None else {"max_epochs": epochs, "limit_val_batches": 0}
    trainer = hydra.utils.instantiate(
        cfg.trainer,
        **limits,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[counted, losses, *staged],
    )
    gpu = cfg.trainer.accelerator == "gpu"
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    trainer.fit(module, dm)
    seconds = time.perf_counter() - start
    return {
        "deliveries": counted.count,
        "steps": counted.steps,
        "seconds": seconds,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
        "gpu_peak_gb": torch.cuda.max_memory_allocated() / 1024**3 if gpu else None,
        "device": torch.cuda.get_device_name() if gpu else cpu(),
        "val_loss": min(losses.seen)[0] if losses.seen else None,
        "best_epoch": min(losses.seen)[1] if losses.seen else None,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    how_long = p.add_mutually_exclusive_group()
    how_long.add_argument("--epochs", type=int, default=2, help="epochs of training alone (at least 1)")
    how_long.add_argument("--validate", action="store_true", help="the selection stage, validation and all")
    p.add_argument("--set", help="time the variants of conf/ablation_set/SET.yaml")
    p.add_argument("--variant", action="append", default=[], help="'NAME=OVERRIDE OVERRIDE': one more variant")
    p.add_argument("overrides", nargs="*", help="Hydra overrides applied to every variant")
    args = p.parse_args()
    if args.epochs < 1:
        p.error(f"--epochs {args.epochs}: must be at least 1")
    epochs = None if args.validate else args.epochs
    rows = {name: time_training([*args.overrides, *own], epochs) for name, own in variants(args).items()}
    first = next(iter(rows.values()))
    print(
        f"device: {first['device']}; torch {torch.__version__}; threads {torch.get_num_threads()}; "
        f"{'the selection stage' if epochs is None else f'{epochs} epochs'}; "
        f"overrides for all: {' '.join(args.overrides) or 'none'}"
    )
    print(
        f"{'variant':<26} {'deliveries':>11} {'seconds':>8} {'deliveries/s':>13} {'steps/s':>8} {'vs default':>10} "
        f"{'peak RSS GB':>12}"
        + (f" {'GPU peak GB':>12}" if first["gpu_peak_gb"] is not None else "")
        + (f" {'val loss':>9} {'best epoch':>10}" if epochs is None else "")
    )
    base = rows["default"]["deliveries"] / rows["default"]["seconds"]
    for name, r in rows.items():
        rate = r["deliveries"] / r["seconds"]
        print(
            f"{name:<26} {r['deliveries']:>11,} {r['seconds']:>8.1f} {rate:>13,.0f} {r['steps'] / r['seconds']:>8.1f} "
            f"{rate / base:>10.2f} "
            f"{r['peak_rss_gb']:>12.2f}"
            + (f" {r['gpu_peak_gb']:>12.2f}" if r["gpu_peak_gb"] is not None else "")
            + (f" {r['val_loss']:>9.4f} {r['best_epoch']:>10}" if epochs is None else "")
        )


if __name__ == "__main__":
    main()
