"""`cricket-attn-ingest` on real match files: output, summary, --strict and bad sources."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from cricket_attn.commands.ingest import main
from tests.conftest import FIXTURES
from tests.data.test_sources import GOOD, UPPER, broken_zips


def test_ingest_writes_the_table_and_prints_a_summary(tmp_path, capsys, fixture_tables):
    out = tmp_path / "out" / "deliveries.parquet"
    assert main([str(FIXTURES), "--out", str(out), "--data-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "matches:      20" in text and f"written:      {out}" in text
    pd.testing.assert_frame_equal(pd.read_parquet(out), fixture_tables.deliveries)
    assert [p.name for p in out.parent.iterdir()] == ["deliveries.parquet"]  # no temp files left


def test_strict_fails_on_a_skipped_file_and_writes_nothing(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(FIXTURES / "1359475.json", src)
    doc = json.loads((FIXTURES / "1359477.json").read_text())
    doc["meta"]["data_version"] = "2.0.0"
    (src / "1359477.json").write_text(json.dumps(doc))
    out = tmp_path / "d.parquet"
    assert main([str(src), "--out", str(out), "--data-dir", str(tmp_path), "--strict"]) == 1
    captured = capsys.readouterr()
    assert "match 1359477: field meta.data_version: unsupported data version '2.0.0'" in captured.out
    assert "--strict" in captured.err and not out.exists()
    # Without --strict the good file is still ingested.
    assert main([str(src), "--out", str(out), "--data-dir", str(tmp_path)]) == 0
    assert set(pd.read_parquet(out)["match_id"]) == {"1359475"}


def test_bad_sources_and_arguments(tmp_path, capsys):
    assert main([str(tmp_path / "nope.zip"), "--data-dir", str(tmp_path)]) == 2
    assert "nope.zip: no such file or folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([str(FIXTURES), "--out", str(tmp_path / "x.csv")])
    assert exit_.value.code == 2


@pytest.mark.parametrize(
    "what, files, found",
    [
        ("an empty folder", {}, "found no files at all; none is a Cricsheet match file"),
        ("text files", {"a.txt": b"x", "b.txt": b"y"}, "found 2 files (2 .txt); none is a Cricsheet match file"),
        (
            "JSON that is no match",
            {"x.json": b'{"foo": 1}', "y.json": b"[1]"},
            "found 2 files (2 .json); all 2 match file(s) were skipped",
        ),
    ],
)
def test_nothing_ingested_is_an_error_naming_what_was_there(tmp_path, capsys, what, files, found):
    src = tmp_path / "src"
    src.mkdir()
    for name, raw in files.items():
        (src / name).write_bytes(raw)
    out = tmp_path / "d.parquet"
    assert main([str(src), "--out", str(out), "--data-dir", str(tmp_path)]) == 1, what
    err = capsys.readouterr().err
    assert f"cricket-attn-ingest: no match ingested from {src}: {found}" in err and not out.exists()


def test_broken_zips_beside_a_good_match_are_named_and_skipped(tmp_path, capsys, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    bad = broken_zips(src, monkeypatch)
    out = tmp_path / "d.parquet"
    assert main([str(src), "--out", str(out), "--data-dir", str(tmp_path)]) == 0
    printed = capsys.readouterr()
    assert set(pd.read_parquet(out)["match_id"]) == {GOOD, UPPER}
    lines = printed.out.splitlines()
    assert f"files skipped: {len(bad)}" in lines
    assert all(sum(name in line for line in lines) == 1 for name in bad)  # each named, in one line
    assert "Traceback" not in printed.err


def test_a_corrupted_cache_is_rebuilt_from_the_sources(tmp_path, capsys, fixture_tables):
    args = [str(FIXTURES), "--data-dir", str(tmp_path), "--out", str(tmp_path / "d.parquet")]
    assert main(args) == 0
    (cached,) = (tmp_path / "cache").glob("deliveries-*.parquet")
    cached.write_bytes(cached.read_bytes()[:1000])  # cut short: not parquet any more
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unreadable" in err[0] and "rebuilt from the sources" in err[0]
    pd.testing.assert_frame_equal(pd.read_parquet(cached), fixture_tables.deliveries)
    assert main(args) == 0 and not capsys.readouterr().err  # the rebuilt cache is read as it is


@pytest.mark.parametrize("full", ["cache", "out"])
def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch, full):
    """The disk fills while the cache is written, or the output (after the cache): one line, naming what
    could not be written, and no half-written file left behind."""
    write = pd.DataFrame.to_parquet

    def filling(self, path, **kwargs):
        if Path(path).parent.name != full:
            return write(self, path, **kwargs)
        Path(path).write_bytes(b"PAR1 half a table")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", filling)
    out = tmp_path / "out" / "d.parquet"
    assert main([str(FIXTURES / "1082591.json"), "--out", str(out), "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    what = f"{tmp_path / 'cache'}:" if full == "cache" else f"--out {out}: cannot write"
    assert len(err) == 1 and err[0].startswith(f"cricket-attn-ingest: {what}") and "No space left on device" in err[0]
    assert not list((tmp_path / full).iterdir())  # no table, no temporary file
