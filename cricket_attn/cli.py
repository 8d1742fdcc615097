"""The command-line kit every command shares: its output checked before any work (the path, the folder, a
write tried, the memory a run would need), its table written whole or not at all (CSV defused for
spreadsheets, probabilities checked first), and its errors as one line with an exit status."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from cricket_attn.atomic import atomic_path
from cricket_attn.config import DEFAULT_EXPERIMENT, DEFAULT_TRACKING_URI


def add_tracking(p: argparse.ArgumentParser, experiment: bool = True) -> None:
    """`--tracking-uri` (and `--experiment`), as every command that reads or writes MLflow runs takes them."""
    p.add_argument(
        "--tracking-uri",
        default=DEFAULT_TRACKING_URI,
        help="MLflow tracking URI (default: the project's mlflow.db, which `make dashboard` shows)",
    )
    if experiment:
        p.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help="MLflow experiment (default: %(default)s)")


def os_reason(err: OSError) -> str:
    """What the system said, in one line: `No space left on device`, not `[Errno 28] ...` or a page."""
    return err.strerror or next(iter(str(err).splitlines()), "") or type(err).__name__


def check_out_path(out: Path, flag: str = "--out") -> None:
    """Refuse, before any work, an output the command could not write."""
    if out.suffix not in (".parquet", ".csv"):
        raise ValueError(f"{flag} {out}: the file name must end in .parquet or .csv")
    if out.is_dir():
        raise ValueError(f"{flag} {out}: is a folder; give a file name ending in .parquet or .csv")
    check_can_write_in(flag, out, out.resolve().parents)


def check_out_folder(flag: str, folder: Path) -> None:
    """Refuse, before any work, a folder for pictures or reports that is a file or could not be written in."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{flag} {folder}: is a file; give a folder (made if missing)")
    check_can_write_in(flag, folder, [folder.resolve(), *folder.resolve().parents])


def check_can_write_in(flag: str, path: Path, folders: Iterable[Path]) -> None:
    """The first of `folders` that exists (the others are made) must be a folder this user may write in."""
    folder = next(p for p in folders if p.exists())
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ValueError(
            f"{flag} {path}: cannot write in {folder} ({'not a folder' if folder.is_file() else 'no permission'})"
        )
    try:  # what the permissions do not tell (/proc, a read-only mount): a file made and removed
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".cricket-attn-probe."):
            pass
    except OSError as err:
        raise ValueError(f"{flag} {path}: cannot write in {folder} ({os_reason(err)})") from None


def check_memory(flag: str, value: int, per_unit: float, fixed: float = 0.0) -> None:
    """Refuse, before the work, a `flag` whose run would need more memory than the machine has free: about
    `fixed + value * per_unit` bytes, against 80% of what is available now. The line names the estimate, what
    is free and the most this machine takes."""
    free = 0.8 * psutil.virtual_memory().available
    need = fixed + value * per_unit
    if need > free:
        most = max(int((free - fixed) // per_unit), 0)
        raise ValueError(
            f"{flag} {value:,}: would need about {_bytes(need)} of memory, more than the {_bytes(free)} free "
            f"here; at most {most:,} on this machine now"
        )


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:,.0f} TiB"


@contextmanager
def writing(flag: str, path: Path) -> Iterator[None]:
    """A command's output written: the file system's refusal (a full disk, no permission, a read-only
    system) as one line naming the output; atomic writes leave no part of it behind."""
    try:
        yield
    except OSError as err:
        raise ValueError(f"{flag} {path}: cannot write ({os_reason(err)})") from None


# What a spreadsheet runs as a formula when a cell starts with it (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def defused(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with each text cell that a spreadsheet would run as a formula (a player named `=1+2`)
    prefixed with a single quote, as OWASP advises for CSV; numbers are left as they are."""
    out = frame.copy()
    for col in frame.select_dtypes(include=["object", "category", "string"]).columns:
        out[col] = (
            frame[col]
            .astype(object)
            .map(lambda v: f"'{v}" if isinstance(v, str) and v.startswith(FORMULA_STARTS) else v)
        )
    return out


def check_probabilities(frame: pd.DataFrame, columns: Iterable[str], whole: bool) -> None:
    """Before a table is written: every probability in `columns` a number in [0, 1] and, where the columns
    are one distribution (`whole`), each row's summing to 1; else a ValueError and nothing written."""
    p = frame[list(columns)].to_numpy(np.float64)
    bad = ~np.isfinite(p).all(axis=1) | (p < 0).any(axis=1) | (p > 1).any(axis=1)
    if whole:
        bad |= np.abs(p.sum(axis=1) - 1) > 1e-6
    if bad.any():
        first = frame.index[bad.argmax()]
        where = f"match {frame.at[first, 'match_id']}" if "match_id" in frame else f"row {first}"
        raise ValueError(
            f"{int(bad.sum()):,} rows have probabilities that are not numbers in [0, 1]"
            f"{' summing to 1' if whole else ''} (first: {where}); nothing written"
        )


def write_table(frame: pd.DataFrame, out: Path, flag: str = "--out") -> None:
    """Parquet or CSV by suffix, atomically: an existing file is replaced only when this succeeds. CSV,
    read by spreadsheets, has its formula-like text defused; parquet keeps the names as they are."""
    with writing(flag, out), atomic_path(out) as tmp:
        if out.suffix == ".parquet":
            frame.to_parquet(tmp, index=False)
        else:
            defused(frame).to_csv(tmp, index=False, float_format="%.9g")


def run_command(prog: str, run, args: argparse.Namespace, also: tuple[type[Exception], ...] = ()) -> int:
    """A scoring command's `run(args)`: its summary printed and exit status 0, or a user's error (a bad
    model, source, argument or match, a file the system refused, or one of `also`, such as an MLflow store
    that cannot be used) as one line on standard error and exit status 2."""
    try:
        summary = run(args)
    except KeyboardInterrupt:  # nothing half written: every output is written whole or not at all
        print(f"{prog}: interrupted; nothing half written", file=sys.stderr)
        return 130
    except (ValueError, *also) as err:  # a bad model (CheckpointError), source (SourceError), argument or match
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a file the system refused (missing, no permission, a full disk): one line
        where = f"{err.filename}: " if err.filename else ""
        print(f"{prog}: {where}{os_reason(err)}", file=sys.stderr)
        return 2
    print(summary)
    return 0


def named_list(what: str, names: list[str], show: int = 10) -> str:
    listed = f" ({', '.join(names[:show])}{', ...' if len(names) > show else ''})" if names else ""
    return f"{what}: {len(names)}{listed}"
