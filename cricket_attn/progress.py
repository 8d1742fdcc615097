"""What a person sees while a long command works: bars on a terminal, one line per epoch and per stage
in a log (CI, a file). The Lightning side (a line or a bar per epoch) is in cricket_attn.training.lit_module.

`mode` is the `progress` setting: `bar` (Lightning's and tqdm's bars), `lines` (one log line per epoch),
`none`, or `auto`: bars when the command writes to a terminal, lines otherwise.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm  # plain bars: these are terminal commands

MODES = ("auto", "bar", "lines", "none")
T = TypeVar("T")


def resolve(mode: str = "auto") -> str:
    """`bar`, `lines` or `none`; `auto` is `bar` on a terminal and `lines` elsewhere."""
    if mode not in MODES:
        raise ValueError(f"progress={mode!r}: choose one of {', '.join(MODES)}")
    if mode == "auto":  # logs go to standard output and bars to standard error: both must be a terminal
        return "bar" if sys.stdout.isatty() and sys.stderr.isatty() else "lines"
    return mode


def track(items: Iterable[T], desc: str, total: int | None = None, unit: str = "it", mode: str = "auto") -> Iterator[T]:
    """`items`, with a tqdm bar on a terminal (mode `bar`); unchanged otherwise."""
    if resolve(mode) != "bar":
        yield from items
        return
    with tqdm(items, desc=desc, total=total, unit=unit, leave=False, dynamic_ncols=True) as bar:
        yield from bar


class Stopwatch:
    """Seconds since it was made, for the stage lines."""

    def __init__(self):
        self.start = time.perf_counter()

    def __str__(self) -> str:
        seconds = time.perf_counter() - self.start
        return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
