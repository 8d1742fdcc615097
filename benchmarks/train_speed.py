"""Training throughput (deliveries per second) and peak memory of the transformer on the IPL archive.

Usage: python benchmarks/train_speed.py [--d-model 64] [--n-layers 2] [--epochs 2] [--accelerator cpu]
       [--precision 32-true] [--batch-size 64] [--numeric-embedding bins] [--numeric-hidden 256]
       [--history-balls 0 32 128]
Times `Trainer.fit` over the training seasons with validation off, so the number is training alone.
`--history-balls` times each K of players' histories in the same run (0: none, the default model); the
peak RSS column is the process's peak so far.
On a GPU, pass --accelerator gpu --precision bf16-mixed --batch-size 1024. Prints a table last.
"""

from __future__ import annotations

import argparse
import platform
import resource
import time

import pytorch_lightning as pl
import torch
from omegaconf import OmegaConf

from cricket_attn.config import load_data_config
from cricket_attn.data.datamodule import CricketDataModule
from cricket_attn.training.lit_module import BallOutcomeModule


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--n-layers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--accelerator", default="cpu")
    p.add_argument("--precision", default="32-true")
    p.add_argument("--numeric-embedding", default="bins", choices=["bins", "mlp", "periodic"])
    p.add_argument("--numeric-hidden", type=int, default=None, help="default: d_model")
    p.add_argument("--history-balls", type=int, nargs="+", default=[0], help="players' history lengths to time")
    args = p.parse_args()
    rows = [time_training(args, k) for k in args.history_balls]
    device = torch.cuda.get_device_name() if args.accelerator == "gpu" else platform.processor() or platform.machine()
    print(f"device: {device}; torch {torch.__version__}; threads {torch.get_num_threads()}")
    print(f"{'model':<56} {'deliveries':>11} {'seconds':>8} {'deliveries/s':>13} {'peak RSS GB':>12}"
          + (f" {'GPU peak GB':>12}" if args.accelerator == "gpu" else ""))
    for row in rows:
        print(row)


def time_training(args, history_balls: int) -> str:
    cfg = load_data_config("ipl")
    dm = CricketDataModule(None, cfg.data_dir, OmegaConf.to_container(cfg.phases), OmegaConf.to_container(cfg.split),
                           min_count=50, batch_size=args.batch_size, history_balls=history_balls)
    dm.prepare_data()
    dm.setup("fit")
    model = dict(dm.encoder.model_dims(), d_model=args.d_model, n_heads=4, n_layers=args.n_layers, max_len=160,
                 numeric_embedding=args.numeric_embedding, numeric_hidden=args.numeric_hidden)
    module = BallOutcomeModule(model)
    trainer = pl.Trainer(max_epochs=args.epochs, accelerator=args.accelerator, devices=1, precision=args.precision,
                         limit_val_batches=0, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    deliveries = int(dm.datasets["train"].lengths.sum()) * args.epochs
    start = time.perf_counter()
    trainer.fit(module, dm)
    seconds = time.perf_counter() - start
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    gpu_peak = torch.cuda.max_memory_allocated() / 1024**3 if args.accelerator == "gpu" else None
    name = f"d_model={args.d_model}, {args.n_layers} layers, {args.numeric_embedding}"
    name += f" (hidden {args.numeric_hidden})" if args.numeric_hidden else ""
    name += f", histories K={history_balls}" if history_balls else ""
    return (f"{name:<56} {deliveries:>11,} {seconds:>8.1f} {deliveries / seconds:>13,.0f} {peak_gb:>12.2f}"
            + (f" {gpu_peak:>12.2f}" if gpu_peak is not None else ""))


if __name__ == "__main__":
    main()
