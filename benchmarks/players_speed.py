"""Times `cricket-attn-players` on one IPL season (default 2025: 74 matches) end to end, and the valuation
alone (`value_matches`: the two passes of the model with an average player, the win-probability model's
fit and every ball's change, the players' sums and intervals). Prints a table last.

    python benchmarks/players_speed.py --model outputs/.../checkpoints/refit/calibrated.ckpt
    python benchmarks/players_speed.py            # the latest transformer run in mlflow.db

The end-to-end figure is the command line's wall time (`--no-mlflow`): Python start-up, imports, model
load, the archive from the cache, the valuation and writing the table; its peak memory is the process's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from machine import cpu

from cricket_attn.config import DEFAULT_TRACKING_URI, load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.inference.serving import load_trained
from cricket_attn.tracking import latest_transformer_run
from cricket_attn.valuation.players import value_matches


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", help="checkpoint or MLflow model URI (default: the latest transformer run's)")
    p.add_argument("--season", type=int, default=2025)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    model = args.model or latest_transformer_run(DEFAULT_TRACKING_URI).data.tags["checkpoint"]
    cfg = load_data_config("ipl")
    tables = load_tables(None, PhaseRules.from_config(cfg.phases), project_path(cfg.data_dir))
    d = tables.deliveries
    season = d[d["season"] == args.season]
    torch.set_num_threads(os.cpu_count() or 1)

    wall = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "players.parquet"
        cli = [sys.executable, "-m", "cricket_attn.commands.players", "--model", model, "--out", str(out)]
        cli += ["--season", str(args.season), "--no-mlflow"]
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run(cli, check=True, capture_output=True)
            wall.append(time.perf_counter() - start)
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024**2
    trained = load_trained(model)
    loop = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        value_matches(trained, season, known=d, matches=tables.matches, by=["season"])
        loop.append(time.perf_counter() - start)
    rows = int((~season["is_super_over"]).sum())

    print(f"machine: {cpu()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    matches = season["match_id"].nunique()
    print(f"IPL {args.season}: {matches} matches, {rows:,} deliveries; medians (best) of {args.repeat}")
    print(f"{'CLI end to end (s)':>20} {'valuation alone (s)':>20} {'deliveries/s':>14} {'CLI peak memory':>16}")
    print(
        f"{statistics.median(wall):>12.2f} ({min(wall):.2f}) {statistics.median(loop):>12.2f} ({min(loop):.2f}) "
        f"{rows / statistics.median(loop):>14,.0f} {peak_gb:>13.2f} GB"
    )
    print(json.dumps({"cli_s": statistics.median(wall), "valuation_s": statistics.median(loop), "peak_gb": peak_gb}))


if __name__ == "__main__":
    main()
