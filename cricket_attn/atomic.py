"""Atomic file output: write to a temporary file beside the target, then rename over it."""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; on success rename it to `target`.

    A crash or exception inside the block removes the temporary file and leaves any existing
    target untouched, so readers never see half a file. A process killed outright cannot clean up:
    its temporary file is removed by the next successful write of the same target (any of them
    older than this write's own).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    # mkstemp makes the file private (0600); give it the permissions an ordinary new file gets.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    tmp_path = Path(tmp)
    started = tmp_path.stat().st_mtime
    try:
        yield tmp_path
        os.replace(tmp_path, target)
        for stale in target.parent.glob(f".{glob.escape(target.name)}.*.tmp"):
            if stale.stat().st_mtime < started:
                stale.unlink(missing_ok=True)
    finally:
        tmp_path.unlink(missing_ok=True)
