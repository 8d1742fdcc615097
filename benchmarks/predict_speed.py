"""Times `cricket-attn-predict` on the whole test split (IPL 2025-2026: 144 matches) and the scoring
loop alone. Prints a table last.

    python benchmarks/predict_speed.py --model outputs/.../checkpoints/refit/calibrated.ckpt
    python benchmarks/predict_speed.py            # the latest transformer run in mlflow.db

The end-to-end figure is the command line's wall time: Python start-up, imports, model load, parsing
the 144 match files, scoring and writing the parquet file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import torch

from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, build_tables, load_tables
from cricket_attn.scoring.serving import load_trained
from cricket_attn.data.sources import default_archive, iter_match_files
from cricket_attn.data.splits import SeasonSplit
from cricket_attn.tracking import DEFAULT_TRACKING_URI, latest_transformer_run


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", help="checkpoint or MLflow model URI (default: latest transformer run's checkpoint)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    model = args.model or latest_transformer_run(DEFAULT_TRACKING_URI).data.tags["checkpoint"]
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
        out = Path(tmp) / "scores.parquet"
        cli = [sys.executable, "-m", "cricket_attn.scoring.predict", "--model", model, "--out", str(out), str(folder)]
        wall = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run(cli, check=True, capture_output=True)
            wall.append(time.perf_counter() - start)
        tables = build_tables(iter_match_files([folder]), phases)
    rows = int((~tables.deliveries["is_super_over"]).sum())
    trained = load_trained(model)
    trained.score(tables.deliveries)  # warm-up
    loop = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        trained.score(tables.deliveries)
        loop.append(time.perf_counter() - start)

    print(f"machine: {platform.processor() or platform.machine()}, {len(os.sched_getaffinity(0))} cores, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"model: {model}")
    print(f"test split: {len(test_ids)} matches, {rows:,} deliveries scored")
    print(f"{'measurement':<44} {'median':>10} {'best':>10}")
    print(f"{'CLI end to end, model load included (s)':<44} {statistics.median(wall):>10.2f} {min(wall):>10.2f}")
    print(f"{'scoring loop (s)':<44} {statistics.median(loop):>10.3f} {min(loop):>10.3f}")
    print(f"{'scoring loop (deliveries/s)':<44} {rows / statistics.median(loop):>10,.0f} {rows / min(loop):>10,.0f}")
    print(json.dumps({"cli_s": statistics.median(wall), "loop_deliveries_per_s": rows / statistics.median(loop)}))


if __name__ == "__main__":
    main()
