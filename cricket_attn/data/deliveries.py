"""The deliveries table: one row per delivery of every match, with its phase and outcome class.

Built from Cricsheet sources by `build_tables`, cached as parquet by `load_tables`.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from omegaconf import OmegaConf

from cricket_attn import progress
from cricket_attn.atomic import atomic_path
from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.cricsheet import DELIVERY_FIELDS, MatchFileError, ParsedMatch, parse_match
from cricket_attn.data.sources import (
    MatchFile,
    configured_sources,
    default_archive,
    iter_match_files,
    resolve_source,
    sha256_of,
    source_kind,
)
from cricket_attn.laws import OUTCOMES

# Bump when the table's columns or their meaning change: it invalidates every cache.
SCHEMA_VERSION = 10  # 10: a T20 said to be of more than 20 overs read as 20; 9: who came in (team1_came_in, ...)
PHASES = ("powerplay", "middle", "death")

# The deliveries table's columns, in order.
COLUMNS = (
    "match_id", "date", "season", "match_type", "event", "competition", "team_type", "venue", "city",
    "balls_per_over", "scheduled_overs", "innings", "is_super_over", "batting_team", "bowling_team",
    "over", "ball_in_over", "delivery_index", "legal_ball_index", "is_legal",
    "batter", "bowler", "non_striker", "batter_id", "bowler_id", "non_striker_id",
    "runs_batter", "runs_extras", "runs_total",
    "runs_wides", "runs_noballs", "runs_byes", "runs_legbyes", "runs_penalty", "runs_non_boundary",
    "extras_type", "is_wicket", "wicket_count", "wicket_kind", "player_out",
    "target_runs", "target_overs", "powerplays", "phase", "outcome",
)  # fmt: skip
_CATEGORICAL = (
    "match_type", "event", "competition", "team_type", "venue", "city", "batting_team", "bowling_team",
    "batter", "bowler", "non_striker", "batter_id", "bowler_id", "non_striker_id", "extras_type", "wicket_kind",
    "powerplays",
)  # fmt: skip


@dataclass(frozen=True)
class PhaseRule:
    """Powerplay and death ranges for one format, counted in overs or legal balls (1-based, inclusive)."""

    match_types: tuple[str, ...]
    unit: str
    powerplay: tuple[int, int]
    death: tuple[int, int]
    balls_per_over: int | None = None

    def __post_init__(self):
        if self.unit not in ("over", "ball"):
            raise ValueError(f"phases: unit must be 'over' or 'ball', got {self.unit!r}")
        if not self.powerplay[1] < self.death[0]:
            raise ValueError(f"phases: powerplay {self.powerplay} must end before death {self.death} starts")


@dataclass(frozen=True)
class PhaseRules:
    """Which phase each delivery falls in, per format; the first rule that matches a match wins."""

    formats: dict[str, PhaseRule]
    super_over: str = "death"
    other: str = "middle"

    @classmethod
    def from_config(cls, cfg: Mapping) -> PhaseRules:
        cfg = dict(cfg)
        formats = {
            name: PhaseRule(
                match_types=tuple(rule["match_types"]),
                unit=rule["unit"],
                powerplay=tuple(rule["powerplay"]),
                death=tuple(rule["death"]),
                balls_per_over=rule.get("balls_per_over"),
            )
            for name, rule in dict(cfg.pop("formats")).items()
        }
        rules = cls(formats=formats, **cfg)
        for name in (rules.super_over, rules.other):
            if name not in PHASES:
                raise ValueError(f"phases: {name!r} is not one of {PHASES}")
        return rules

    def fingerprint(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def assign(
        self,
        match_type: pd.Series,
        balls_per_over: pd.Series,
        over: np.ndarray,
        legal_ball_index: np.ndarray,
        is_super_over: np.ndarray,
        powerplays: pd.Series | None = None,
    ) -> pd.Categorical:
        """Phase of each delivery. A wide or no-ball takes the phase of the legal ball it precedes. Where the
        innings records its own powerplays (`powerplays`, legal-ball windows as the deliveries table holds
        them: the Big Bash's four overs and Power Surge, a powerplay shortened by rain), they are its
        powerplay and the format's range is not; the death range is the format's either way."""
        codes = np.full(len(over), PHASES.index(self.other), dtype=np.int8)
        decided = np.zeros(len(over), dtype=bool)
        in_recorded, recorded = powerplay_mask(powerplays, legal_ball_index)
        for rule in self.formats.values():
            mask = match_type.isin(rule.match_types).to_numpy() & ~decided
            if rule.balls_per_over is not None:
                mask &= balls_per_over.to_numpy() == rule.balls_per_over
            n = over + 1 if rule.unit == "over" else legal_ball_index + 1
            powerplay = np.where(recorded, in_recorded, n <= rule.powerplay[1])
            rule_codes = np.where(powerplay, 0, np.where(n >= rule.death[0], 2, 1))
            codes[mask] = rule_codes[mask]
            decided |= mask
        # A super over is a one-over shoot-out: it is always played at death-overs intensity.
        codes[is_super_over] = PHASES.index(self.super_over)
        return pd.Categorical.from_codes(codes, categories=PHASES)


def powerplay_mask(powerplays: pd.Series | None, legal_ball_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(in a recorded powerplay, the innings records its powerplays) per delivery, from each innings'
    windows "first-last;..." (0-based legal balls, inclusive; "" or missing: none recorded)."""
    inside = np.zeros(len(legal_ball_index), dtype=bool)
    recorded = np.zeros(len(legal_ball_index), dtype=bool)
    if powerplays is None:
        return inside, recorded
    windows = pd.Series(powerplays).astype("category")
    codes = windows.cat.codes.to_numpy()
    for code, text in enumerate(windows.cat.categories):
        if not text:
            continue
        rows = codes == code
        recorded |= rows
        for window in str(text).split(";"):
            first, last = (int(end) for end in window.split("-"))
            inside |= rows & (legal_ball_index >= first) & (legal_ball_index <= last)
    return inside, recorded


def opening_powerplay(windows: str) -> str:
    """Of an innings' recorded windows, the one from its first ball: what a side that has not batted yet is
    known to get (a batting Power Surge is the batting side's own call)."""
    return ";".join(w for w in windows.split(";") if w.startswith("0-"))


@dataclass
class Skipped:
    """A file left out of the table, and why."""

    file: str
    match_id: str
    reason: str


@dataclass
class Ingested:
    """The deliveries and matches tables, the files that were skipped, and the copies of a match that
    were left out because an earlier source held it (pooled sources share match ids: the IPL archive and
    Cricsheet's T20 zip both hold the IPL)."""

    deliveries: pd.DataFrame
    matches: pd.DataFrame
    skipped: list[Skipped] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    key: str = ""  # the cache key (sources' content, phase rules, schema): what MLflow records as the digest
    duplicates: list[Skipped] = field(default_factory=list)


def build_tables(files: Iterable[MatchFile], phases: PhaseRules) -> Ingested:
    """Parse every match file; bad files are skipped (and listed), never fatal to the good ones. A match id
    read a second time is a duplicate: the first copy read is kept, so list the source to keep first."""
    parsed: list[ParsedMatch] = []
    skipped: list[Skipped] = []
    duplicates: list[Skipped] = []
    seen: dict[str, tuple[str, bytes]] = {}  # match id: the file kept, and its content's digest
    for file in progress.track(files, "reading match files", unit="file"):
        if file.match_id in seen and file.content is not None:  # not parsed again: the first copy is kept
            kept, digest = seen[file.match_id]
            same = "the same content as" if digest == hashlib.sha256(file.raw).digest() else "content different from"
            reason = f"{file.name}: match {file.match_id}: duplicate match id, {same} {kept}, which was kept"
            duplicates.append(Skipped(file.name, file.match_id, reason))
            continue
        try:
            match = parse_match(file)
        except MatchFileError as err:
            skipped.append(Skipped(file.name, file.match_id, str(err)))
            continue
        seen[file.match_id] = (file.name, hashlib.sha256(file.raw).digest())
        parsed.append(match)
    parsed.sort(key=lambda m: (m.info["date"], m.info["match_id"]))
    return Ingested(_deliveries_table(parsed, phases), _matches_table(parsed), skipped, duplicates=duplicates)


def _matches_table(parsed: Sequence[ParsedMatch]) -> pd.DataFrame:
    rows = [{k: v for k, v in m.info.items() if not k.startswith("_")} for m in parsed]
    for row, m in zip(rows, parsed):
        row["n_innings"] = len(m.innings)
        row["n_deliveries"] = len(m.deliveries)
    matches = pd.DataFrame(rows)
    if len(matches):
        matches["date"] = pd.to_datetime(matches["date"]).astype("datetime64[ms]")
    return matches


def _deliveries_table(parsed: Sequence[ParsedMatch], phases: PhaseRules) -> pd.DataFrame:
    if not sum(len(m.deliveries) for m in parsed):
        return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    rows = [row for m in parsed for row in m.deliveries]
    table = dict(
        zip(DELIVERY_FIELDS, (np.asarray(col) if isinstance(col[0], (int, bool)) else col for col in zip(*rows)))
    )

    # Match- and innings-level values, repeated onto their deliveries.
    match_pos = np.repeat(np.arange(len(parsed)), [len(m.deliveries) for m in parsed])
    innings_offset = np.cumsum([0] + [len(m.innings) for m in parsed])[:-1]
    innings_pos = innings_offset[match_pos] + table.pop("innings_pos")
    info = pd.DataFrame([m.info for m in parsed]).iloc[match_pos].reset_index(drop=True)
    inn = pd.DataFrame([i for m in parsed for i in m.innings]).iloc[innings_pos].reset_index(drop=True)

    df = pd.DataFrame(table)
    match_columns = ("match_id", "season", "match_type", "event", "competition", "team_type", "venue", "city")
    for col in (*match_columns, "balls_per_over"):
        df[col] = info[col]
    df["scheduled_overs"] = info["scheduled_overs"].astype("Int64")
    df["date"] = pd.to_datetime(info["date"]).astype("datetime64[ms]")  # parquet keeps ms, not s
    for col in ("innings", "is_super_over", "batting_team", "bowling_team"):
        df[col] = inn[col].to_numpy()
    df["target_runs"] = inn["target_runs"].astype("Int64")
    df["target_overs"] = inn["target_overs"].astype("Float64")
    df["powerplays"] = inn["powerplays"].to_numpy()
    df["is_wicket"] = df["wicket_count"] > 0
    df["phase"] = phases.assign(
        df["match_type"],
        df["balls_per_over"],
        df["over"].to_numpy(),
        df["legal_ball_index"].to_numpy(),
        df["is_super_over"].to_numpy(dtype=bool),
        df["powerplays"],
    )
    df["outcome"] = pd.Categorical.from_codes(df["outcome"].to_numpy(), categories=OUTCOMES)
    for col in _CATEGORICAL:
        df[col] = df[col].astype("category")
    return df[list(COLUMNS)]


def _fingerprint(sources: Sequence[Path], phases: PhaseRules) -> str:
    """A cache key: what the sources contain, how phases are assigned and the table's schema."""
    digest = hashlib.sha256(f"schema={SCHEMA_VERSION};phases={phases.fingerprint()}".encode())
    for source in sources:
        if source_kind(source) == "folder":
            for f in sorted(p for p in source.rglob("*") if p.is_file()):
                stat = f.stat()
                digest.update(f"{f.relative_to(source)}:{stat.st_size}:{stat.st_mtime_ns};".encode())
        else:
            digest.update(sha256_of(source).encode())
    return digest.hexdigest()[:16]


def config_tables(data: str = "ipl", sources: Sequence[str] | None = None) -> Ingested:
    """The tables of the data config `conf/data/<data>.yaml`: its sources (or `sources` instead, as a
    command's arguments name them), read with its phase rules into its cache folder."""
    cfg = load_data_config(data)
    phases = PhaseRules.from_config(OmegaConf.to_container(cfg.phases, resolve=True))
    sources = list(sources) if sources else configured_sources(cfg.sources)
    return load_tables(sources, phases, project_path(cfg.data_dir))


def load_tables(
    sources: Sequence[str | Path] | None, phases: PhaseRules, data_dir: str | Path = "data", refresh: bool = False
) -> Ingested:
    """The tables for `sources` (None: the embedded IPL archive; see `resolve_source` for what a source
    may be), from the parquet cache when it is current. Where sources share a match id, the first keeps it."""
    data_dir = Path(data_dir)
    paths = [resolve_source(s, data_dir) for s in sources] if sources else [default_archive(data_dir)]
    cache = data_dir / "cache"
    key = _fingerprint(paths, phases)
    deliveries_path = cache / f"deliveries-{key}.parquet"
    matches_path = cache / f"matches-{key}.parquet"
    record_path = cache / f"ingest-{key}.json"
    if not refresh and record_path.exists() and deliveries_path.exists() and matches_path.exists():
        try:
            record = json.loads(record_path.read_text())
            return Ingested(
                deliveries=pd.read_parquet(deliveries_path),
                matches=pd.read_parquet(matches_path),
                skipped=[Skipped(**s) for s in record["skipped"]],
                sources=[str(p) for p in paths],  # where they were read from now (a copy or a download)
                key=key,
                duplicates=[Skipped(**s) for s in record["duplicates"]],
            )
        except (pa.ArrowException, OSError, ValueError, KeyError, TypeError) as err:  # a damaged cache
            why = str(err).splitlines()[0] if str(err) else type(err).__name__
            print(f"{cache}: the cached tables {key} are unreadable ({why}); rebuilt from the sources", file=sys.stderr)
    result = build_tables(iter_match_files(paths), phases)
    result.sources, result.key = [str(p) for p in paths], key
    write_parquet(result.deliveries, deliveries_path)
    write_parquet(result.matches, matches_path)
    # The record goes last: its presence means the two tables beside it are complete.
    with atomic_path(record_path) as tmp:
        listed = {"skipped": result.skipped, "duplicates": result.duplicates}
        tmp.write_text(json.dumps({"sources": result.sources} | {k: [asdict(s) for s in v] for k, v in listed.items()}))
    return result


def write_parquet(df: pd.DataFrame, path: str | Path) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def class_frequencies(deliveries: pd.DataFrame) -> pd.Series:
    """Share of each outcome class, in class order."""
    return deliveries["outcome"].value_counts(normalize=True).reindex(list(OUTCOMES), fill_value=0.0)


def summary(result: Ingested) -> str:
    """A short human-readable account of what was ingested and what was skipped."""
    d, m = result.deliveries, result.matches
    players = set().union(*(d[c].dropna().unique() for c in ("batter_id", "bowler_id", "non_striker_id")))
    innings = d.groupby(["match_id", "innings"], observed=True)["is_super_over"].first()
    seasons = sorted(m["season"].unique()) if len(m) else []
    lines = [
        f"sources:      {', '.join(result.sources)}",
        f"matches:      {len(m):,} ({int((m['n_deliveries'] == 0).sum()) if len(m) else 0} without deliveries)",
        f"innings:      {len(innings):,} ({int(innings.sum())} super-over innings)",
        f"deliveries:   {len(d):,}",
        f"legal balls:  {int(d['is_legal'].sum()):,}",
        f"players:      {len(players):,}",
        f"seasons:      {len(seasons)} ({seasons[0]}-{seasons[-1]})" if seasons else "seasons:      0",
        "outcome classes:",
    ]
    if len(d):
        freq = class_frequencies(d)
        counts = d["outcome"].value_counts().reindex(freq.index)
        lines += [f"  {name:<7} {counts[name]:>9,}  {share:6.2%}" for name, share in freq.items()]
    lines.append(f"files skipped: {len(result.skipped)}")
    lines += [f"  {s.reason}" for s in result.skipped]
    if result.duplicates:  # expected when sources overlap: a count, and the first few
        lines.append(
            f"duplicates:   {len(result.duplicates):,} match ids already read from an earlier source, left out"
        )
        lines += [f"  {s.reason}" for s in result.duplicates[:3]]
        lines += [f"  ... and {len(result.duplicates) - 3:,} more"] if len(result.duplicates) > 3 else []
    return "\n".join(lines)


def plain_types(d: pd.DataFrame) -> pd.DataFrame:
    """The table with plain column types (strings, floats, bools), for exchange formats such as an
    MLflow model signature or CSV. `restore_types` undoes it."""
    out = d.copy()
    for col in out.columns:
        dtype = out[col].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            out[col] = out[col].astype(object).where(out[col].notna(), None)
        elif dtype in ("Int64", "Float64"):
            out[col] = out[col].astype("float64")
    return out


def restore_types(d: pd.DataFrame) -> pd.DataFrame:
    """A deliveries table given with plain types, back to the types `build_tables` makes."""
    out = d.copy()
    for col in _CATEGORICAL:
        if col in out.columns:
            out[col] = out[col].astype("category")
    for col, categories in (("outcome", OUTCOMES), ("phase", PHASES)):
        if col in out.columns:
            out[col] = pd.Categorical(out[col].astype(object), categories=categories)
    for col in ("scheduled_overs", "target_runs"):
        if col in out.columns:
            out[col] = pd.to_numeric(out[col]).astype("Int64")
    if "target_overs" in out.columns:
        out["target_overs"] = pd.to_numeric(out["target_overs"]).astype("Float64")
    return out
