"""Times ingest of a data config's sources (`--data ipl`, the default, or `--data t20`, every men's T20
match): cold (parse every match file) and from the parquet cache, with the command's peak memory.

Both are measured in-process (what a notebook or the DataModule pays) and as the command-line
tool's wall time (Python start-up and imports included). Prints a table last.
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from machine import cpu

from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, build_tables, load_tables
from cricket_attn.data.sources import configured_sources, default_archive, iter_match_files, resolve_source


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="ipl", help="data config in conf/data/ (default ipl)")
    parser.add_argument("--repeat", type=int, default=3, help="cold runs of each kind (cached runs: 5)")
    args = parser.parse_args()
    cfg = load_data_config(args.data)
    phases = PhaseRules.from_config(cfg.phases)
    data_dir = project_path(cfg.data_dir)
    named = configured_sources(cfg.sources) or [str(default_archive(data_dir))]
    paths = [resolve_source(s, data_dir) for s in named]  # downloaded before timing starts
    rows = {}
    rows["cold, in-process (parse every file)"] = timed(
        lambda: build_tables(iter_match_files(paths), phases), args.repeat
    )
    with tempfile.TemporaryDirectory() as tmp:
        load_tables(paths, phases, data_dir=tmp)  # fill a private cache
        rows["cached, in-process (read parquet)"] = timed(lambda: load_tables(paths, phases, data_dir=tmp), 5)
        cli = [sys.executable, "-m", "cricket_attn.commands.ingest", *map(str, paths), "--data-dir", tmp]
        rows["cold, CLI wall time (--refresh)"] = timed(
            lambda: subprocess.run(cli + ["--refresh"], check=True, capture_output=True), args.repeat
        )
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the cold commands' largest
        rows["cached, CLI wall time"] = timed(lambda: subprocess.run(cli, check=True, capture_output=True), 3)
    tables = load_tables(paths, phases, data_dir=data_dir)

    print(f"machine: {cpu()}, {platform.system()}, Python {platform.python_version()}")
    print(f"sources: {', '.join(map(str, paths))}")
    print(
        f"read: {len(tables.matches):,} matches, {len(tables.deliveries):,} deliveries "
        f"({len(tables.duplicates):,} duplicate match ids left out, {len(tables.skipped)} files skipped)"
    )
    print(f"{'measurement':<40} {'median s':>9} {'min s':>7}")
    for name, times in rows.items():
        print(f"{name:<40} {statistics.median(times):>9.3f} {min(times):>7.3f}")
    print(f"peak memory of the cold command: {peak_kib:,} KiB ({peak_kib / 2**20:.2f} GiB)")


if __name__ == "__main__":
    main()
