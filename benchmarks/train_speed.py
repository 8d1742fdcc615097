"""Training throughput (deliveries per second) and peak memory of the transformer as conf/ configures it.

Usage: python benchmarks/train_speed.py [--epochs 2] [--set context] [--variant 'NAME=OVERRIDE ...'] [OVERRIDE ...]

Each variant is the default configuration (conf/config.yaml) with its overrides, timed in the same run:
`--set NAME` takes the variants of conf/ablation_set/NAME.yaml (e.g. `context`: players' histories and
the first innings against the default), `--variant` adds one
(`--variant 'k64=data.history_balls=64 model.history_roles=[batter]'`), and with neither only the
default is timed. Trailing overrides apply to every variant, e.g. on a GPU
`trainer=gpu trainer.precision=bf16-mixed data.batch_size=1024`.

Times `Trainer.fit` over the selection stage's training seasons with validation off, so the number is
training alone (the data set-up, teacher included, comes before the clock starts). The peak RSS column is
the process's peak so far, so only its growth down the table says anything. Prints a table last.
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
    """Counts the real (unpadded) deliveries of the batches trained on."""

    def __init__(self):
        self.count = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        self.count += int(batch["mask"].sum())


def time_training(overrides: list[str], epochs: int) -> dict:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"), tempfile.TemporaryDirectory() as tmp:
        cfg = compose(config_name="config", overrides=[f"paths.output_dir={tmp}", *overrides])
        return _time(cfg, epochs)


def _time(cfg, epochs: int) -> dict:
    pl.seed_everything(cfg.seed)
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("fit")
    model = {**dm.encoder.model_dims(), **OmegaConf.to_container(cfg.model, resolve=True)}
    module = BallOutcomeModule(model, **OmegaConf.to_container(cfg.optim, resolve=True))
    counted = Deliveries()
    trainer = hydra.utils.instantiate(
        cfg.trainer,
        max_epochs=epochs,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[counted],
    )
    gpu = cfg.trainer.accelerator == "gpu"
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    trainer.fit(module, dm)
    seconds = time.perf_counter() - start
    return {
        "deliveries": counted.count,
        "seconds": seconds,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
        "gpu_peak_gb": torch.cuda.max_memory_allocated() / 1024**3 if gpu else None,
        "device": torch.cuda.get_device_name() if gpu else cpu(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--set", help="time the variants of conf/ablation_set/SET.yaml")
    p.add_argument("--variant", action="append", default=[], help="'NAME=OVERRIDE OVERRIDE': one more variant")
    p.add_argument("overrides", nargs="*", help="Hydra overrides applied to every variant")
    args = p.parse_args()
    rows = {name: time_training(own + args.overrides, args.epochs) for name, own in variants(args).items()}
    first = next(iter(rows.values()))
    print(
        f"device: {first['device']}; torch {torch.__version__}; threads {torch.get_num_threads()}; "
        f"{args.epochs} epochs; overrides for all: {' '.join(args.overrides) or 'none'}"
    )
    print(
        f"{'variant':<26} {'deliveries':>11} {'seconds':>8} {'deliveries/s':>13} {'vs default':>10} {'peak RSS GB':>12}"
        + (f" {'GPU peak GB':>12}" if first["gpu_peak_gb"] is not None else "")
    )
    base = rows["default"]["deliveries"] / rows["default"]["seconds"]
    for name, r in rows.items():
        rate = r["deliveries"] / r["seconds"]
        print(
            f"{name:<26} {r['deliveries']:>11,} {r['seconds']:>8.1f} {rate:>13,.0f} {rate / base:>10.2f} "
            f"{r['peak_rss_gb']:>12.2f}" + (f" {r['gpu_peak_gb']:>12.2f}" if r["gpu_peak_gb"] is not None else "")
        )


if __name__ == "__main__":
    main()
