"""Outputs are written atomically: a failure leaves the old file and no temporary file."""

from __future__ import annotations

import pytest

from cricket_attn.atomic import atomic_path


def test_success_replaces_the_target(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with atomic_path(target) as tmp:
        tmp.write_text("new")
        assert target.read_text() == "old"  # not visible until the block ends
    assert target.read_text() == "new" and list(tmp_path.iterdir()) == [target]
    assert target.stat().st_mode & 0o044  # readable like any new file, not private to the owner


def test_failure_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash mid-write")
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]


def test_a_killed_writers_temporary_file_goes_with_the_next_write(tmp_path):
    import os

    target = tmp_path / "scores.parquet"
    stale = tmp_path / ".scores.parquet.k1ll3d.tmp"  # what a writer killed mid-write leaves
    stale.write_text("half")
    os.utime(stale, (1_000_000_000, 1_000_000_000))
    other = tmp_path / ".other.parquet.x.tmp"  # another output's: not ours to remove
    other.write_text("half")
    os.utime(other, (1_000_000_000, 1_000_000_000))
    with atomic_path(target) as tmp:
        tmp.write_text("whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.parquet.x.tmp", "scores.parquet"]
