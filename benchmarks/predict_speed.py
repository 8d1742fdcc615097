"""Times `cricket-attn-predict` on the whole test split (IPL 2025-2026: 144 matches) and the scoring
loop alone. Prints a table last.

    python benchmarks/predict_speed.py --model outputs/.../checkpoints/refit/calibrated.ckpt
    python benchmarks/predict_speed.py            # the latest transformer run in mlflow.db
    python benchmarks/predict_speed.py --model A.ckpt --model B.ckpt   # two models in the same run

The end-to-end figure is the command line's wall time: Python start-up, imports, model load, parsing
the 144 match files, scoring and writing the parquet file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import torch
from machine import cpu

from cricket_attn.config import DEFAULT_TRACKING_URI, load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, build_tables, load_tables
from cricket_attn.data.sources import default_archive, iter_match_files
from cricket_attn.data.splits import SeasonSplit
from cricket_attn.inference.serving import load_trained
from cricket_attn.tracking import latest_transformer_run


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument(
        "--model",
        action="append",
        help="checkpoint or MLflow model URI; repeat it to time several "
        "in the same run (default: latest transformer run's checkpoint)",
    )
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    models = args.model or [latest_transformer_run(DEFAULT_TRACKING_URI).data.tags["checkpoint"]]
    cfg = load_data_config("ipl")
    phases = PhaseRules.from_config(cfg.phases)
    archive = default_archive(project_path(cfg.data_dir))
    d = load_tables(None, phases, project_path(cfg.data_dir)).deliveries
    test_ids = set(SeasonSplit.from_config(cfg.split).split(d)["test"]["match_id"])
    torch.set_num_threads(os.cpu_count() or 1)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "test_split"
        folder.mkdir()
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if Path(name).stem in test_ids:
                    (folder / Path(name).name).write_bytes(z.read(name))
        tables = build_tables(iter_match_files([folder]), phases)
        timings = {model: time_model(model, folder, tables.deliveries, args.repeat) for model in models}
    rows = int((~tables.deliveries["is_super_over"]).sum())

    print(f"machine: {cpu()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"test split: {len(test_ids)} matches, {rows:,} deliveries scored; medians (best) of {args.repeat}")
    print(f"{'model':<72} {'CLI end to end (s)':>20} {'scoring loop (s)':>18} {'deliveries/s':>14}")
    for model, (wall, loop) in timings.items():
        shown = model if len(model) <= 72 else "..." + model[-69:]
        print(
            f"{shown:<72} {statistics.median(wall):>12.2f} ({min(wall):.2f}) "
            f"{statistics.median(loop):>10.3f} ({min(loop):.3f}) {rows / statistics.median(loop):>14,.0f}"
        )
    print(
        json.dumps(
            {
                m: {"cli_s": statistics.median(w), "loop_deliveries_per_s": rows / statistics.median(lp)}
                for m, (w, lp) in timings.items()
            }
        )
    )


def time_model(model: str, folder: Path, deliveries, repeat: int) -> tuple[list[float], list[float]]:
    """Wall times of the command line on `folder` (model load included) and of the scoring loop alone."""
    out = folder.parent / "scores.parquet"
    cli = [sys.executable, "-m", "cricket_attn.commands.predict", "--model", model, "--out", str(out), str(folder)]
    wall = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cli, check=True, capture_output=True)
        wall.append(time.perf_counter() - start)
    trained = load_trained(model)
    trained.score(deliveries)  # warm-up
    loop = []
    for _ in range(repeat):
        start = time.perf_counter()
        trained.score(deliveries)
        loop.append(time.perf_counter() - start)
    return wall, loop


if __name__ == "__main__":
    main()
