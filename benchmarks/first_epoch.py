"""Ingest to the first epoch: what a fresh set-up pays before training starts, with players' histories.

Usage: python benchmarks/first_epoch.py [--history-balls 0 32 128] [--first-innings]

For each setting, in one process, from an empty data folder: the cold ingest of the whole IPL archive
(parse every match file, write the parquet cache), the DataModule's set-up (encoder, sequences, and the
players' histories when asked), and the first training step of the default model's dimensions. The
teacher is left out (`data.teacher` off): its first fit on a new set of seasons takes minutes and is
cached after (docs/usage.md); every other step is paid on every run. Prints a table last.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import pytorch_lightning as pl
import torch
from machine import cpu
from omegaconf import OmegaConf

from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.datamodule import CricketDataModule
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.data.sources import default_archive
from cricket_attn.training.lit_module import BallOutcomeModule


def stages(history_balls: int, first_innings: bool) -> dict[str, float]:
    cfg = load_data_config("ipl")
    archive = default_archive(project_path(cfg.data_dir))  # downloaded before timing starts
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        load_tables([archive], PhaseRules.from_config(cfg.phases), data_dir=tmp)
        seconds["ingest"] = time.perf_counter() - start
        start = time.perf_counter()
        dm = CricketDataModule(
            [str(archive)],
            tmp,
            phases=OmegaConf.to_container(cfg.phases),
            split=OmegaConf.to_container(cfg.split),
            teacher=None,
            records=None,
            trees=None,
            season_half_life=None,
            min_count=cfg.min_count,
            batch_size=cfg.batch_size,
            history_balls=history_balls,
            first_innings=first_innings,
        )
        dm.prepare_data()
        dm.setup("fit")
        seconds["data set-up"] = time.perf_counter() - start
        start = time.perf_counter()
        module = BallOutcomeModule(dict(dm.encoder.model_dims(), d_model=64, n_heads=4, n_layers=2, max_len=160))
        trainer = pl.Trainer(
            max_steps=1,
            limit_val_batches=0,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(module, dm)
        seconds["first step"] = time.perf_counter() - start
    return seconds


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--history-balls", type=int, nargs="+", default=[0, 32, 128])
    p.add_argument("--first-innings", action="store_true", help="also give each chase its first innings")
    args = p.parse_args()
    rows = [(k, stages(k, args.first_innings)) for k in args.history_balls]
    print(
        f"\nmachine: {cpu()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s); first innings as context: {args.first_innings}"
    )
    print(f"{'histories K':>11} {'ingest s':>9} {'data set-up s':>14} {'first step s':>13} {'total s':>8}")
    for k, s in rows:
        print(f"{k:>11} {s['ingest']:>9.1f} {s['data set-up']:>14.1f} {s['first step']:>13.2f} {sum(s.values()):>8.1f}")


if __name__ == "__main__":
    main()
