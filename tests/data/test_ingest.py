"""`cricket-attn-ingest` on real match files: output, summary, --strict and bad sources."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from cricket_attn.data.ingest import main
from tests.conftest import FIXTURES


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
