"""Times ingest of the whole IPL archive: cold (parse every match file) and from the parquet cache.

Both are measured in-process (what a notebook or the DataModule pays) and as the command-line
tool's wall time (Python start-up and imports included). Prints a table last.
"""

from __future__ import annotations

import platform
import statistics
import subprocess
import sys
import tempfile
import time

from machine import cpu

from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, build_tables, load_tables
from cricket_attn.data.sources import default_archive, iter_match_files


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    cfg = load_data_config("ipl")
    phases = PhaseRules.from_config(cfg.phases)
    data_dir = project_path(cfg.data_dir)
    archive = default_archive(data_dir)  # downloaded before timing starts
    rows = {}
    rows["cold, in-process (parse 1,239 files)"] = timed(lambda: build_tables(iter_match_files([archive]), phases), 3)
    with tempfile.TemporaryDirectory() as tmp:
        load_tables([archive], phases, data_dir=tmp)  # fill a private cache
        rows["cached, in-process (read parquet)"] = timed(lambda: load_tables([archive], phases, data_dir=tmp), 5)
        cli = [sys.executable, "-m", "cricket_attn.data.ingest", str(archive), "--data-dir", tmp]
        rows["cached, CLI wall time"] = timed(lambda: subprocess.run(cli, check=True, capture_output=True), 3)
        rows["cold, CLI wall time (--refresh)"] = timed(
            lambda: subprocess.run(cli + ["--refresh"], check=True, capture_output=True), 3
        )
    n = len(load_tables([archive], phases, data_dir=data_dir).deliveries)

    print(f"machine: {cpu()}, {platform.system()}, Python {platform.python_version()}")
    print(f"archive: {archive} ({n:,} deliveries)")
    print(f"{'measurement':<40} {'median s':>9} {'min s':>7}")
    for name, times in rows.items():
        print(f"{name:<40} {statistics.median(times):>9.3f} {min(times):>7.3f}")


if __name__ == "__main__":
    main()
