"""What the commands that run a trained model over match files read: the matches (and what was left out), the
earlier matches a model's records and histories read, and what the model does not know."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.cli import named_list
from cricket_attn.data.deliveries import Ingested, PhaseRules, build_tables, load_tables
from cricket_attn.data.features import squads_with_registry_ids, with_registry_ids
from cricket_attn.data.histories import days, known_deliveries
from cricket_attn.data.sources import MATCH_FILE_KINDS, MatchFile, iter_match_files, resolve_source, what_is_in

# What `unknown_to` lists, by the deliveries' column; where a match file names a ground and (from info.event) a league.
ROLES = {"batters": "batter", "bowlers": "bowler", "venues": "venue", "competitions": "competition"}
FIELDS = {"venue": "info.venue", "competition": "competition"}  # a match file's ground; its league (from info.event)


def unknown_to(encoder, deliveries: pd.DataFrame) -> dict[str, list[str]]:
    """The batters, the bowlers, the venues and the competitions of the regular innings that the model knows
    nothing of, by name (as the files write them): for a model of training-season rates, those without an
    embedding of their own; for a model reading records as of the day (its record book attached), those
    with no ball in the known matches before their match's day (a debut, a new ground). A player is known
    as a batter or as a bowler: a bowler's record says nothing of his batting. Players and venues are
    matched as the model knows them (`SequenceEncoder.key`: registry ids, one key per ground)."""
    regular = deliveries[~deliveries["is_super_over"].astype(bool)]
    return {
        what: sorted(set(regular[column].astype(str)[_missing(encoder, regular, column)]))
        for what, column in ROLES.items()
    }


def unknown_places(encoder, deliveries: pd.DataFrame) -> list[str]:
    """A line per ground or competition the model knows nothing of (`unknown_to`'s rule), naming the field and
    its matches: they are still worked on, as a new ground's or league's first match is."""
    regular = deliveries[~deliveries["is_super_over"].astype(bool)]
    why = "no ball of it before the day" if encoder.records is not None else "no embedding of its own"
    lines = []
    for column, where in FIELDS.items():
        missing = regular[_missing(encoder, regular, column)].drop_duplicates("match_id")
        for name, matches in missing.groupby(missing[column].astype(str), sort=True)["match_id"]:
            ids = [str(m) for m in matches]
            lines.append(named_list(f"{where} {name!r}: unknown to the model ({why}); matches", ids, show=5))
    return lines[:10] + ([f"... and {len(lines) - 10} more grounds or competitions unknown"] if len(lines) > 10 else [])


def _missing(encoder, regular: pd.DataFrame, column: str) -> np.ndarray:
    """Each ball's `column` unknown to the model: without an embedding of its own (a model of training-season
    rates), or with no ball in the known matches before the day (a model reading records as of the day)."""
    keys = encoder.key(regular, column) if column != "competition" else regular[column]
    if encoder.records is not None:
        book = encoder.record_book
        return np.asarray(book.before(column, np.asarray(keys, dtype=object), days(regular["date"])).balls == 0)
    vocabularies = {"batter": encoder.batters, "bowler": encoder.bowlers, "venue": encoder.venues}
    vocab = vocabularies.get(column, encoder.competitions)
    return np.asarray(vocab.encode(keys) == 0)


def read_matches(sources: list[str], data_dir: Path, phases: PhaseRules, written: Sequence[MatchFile] = ()) -> Ingested:
    """The matches a command works on, read as they are (never cached): files, folders and zips, and
    `cricsheet:` names and addresses resolved as training resolves them (a local copy, or downloaded once
    into `data_dir/raw/`), and the match files `written` on its command line (`cricsheet.match_before`)."""
    files = iter_match_files([resolve_source(s, data_dir) for s in sources])
    return build_tables(itertools.chain(files, written), phases)


def dated_ahead(tables: Ingested, today: date | None = None) -> list[str]:
    """A line for matches dated after today (a typing slip, or a file written ahead): scored as dated, said."""
    today = today or date.today()
    m = tables.matches
    ahead = m[pd.to_datetime(m["date"]).dt.date > today] if len(m) else m
    if ahead.empty:
        return []
    first = ahead.sort_values("date").iloc[0]
    return [
        f"{len(ahead):,} match(es) dated after today, worked on as dated (first: {first['match_id']}, "
        f"{pd.Timestamp(first['date']).date()})"
    ]


def left_out(tables: Ingested) -> list[str]:
    """Every file a command did not read, and why: those that could not be read, and the second copies of a
    match id (the first read is kept; each line says whether the copy left out differs)."""
    return [s.reason for s in tables.skipped + tables.duplicates]


def known_sources(history: list[str] | None, encoder) -> tuple[list[str] | None, str]:
    """Where a command reads the earlier matches a model's records and histories come from, and how to say
    so: `--history` where given, else the data the model was trained on (None: the embedded IPL archive)."""
    if history:
        return history, f"{', '.join(history)} (--history)"
    return encoder.sources, f"{', '.join(encoder.sources or ['embedded'])} (the model's training data)"


@dataclass
class Earlier:
    """A command's matches beside the earlier matches a model reads its records, histories and the league's
    recent level from (`with_earlier`)."""

    deliveries: pd.DataFrame  # the command's deliveries, each player under the registry id his name has anywhere
    known: pd.DataFrame  # those and the earlier matches', each match once (`known_deliveries`)
    matches: pd.DataFrame  # the command's matches and the earlier ones', each once
    known_from: str  # where the earlier matches came from, as the summary says it ("": none read)
    notes: list[str]  # what was done to the data on the way, a line each
    skipped: list[str]  # the earlier matches' files left out, and why


def with_earlier(
    tables: Ingested,
    encoder,
    history: list[str] | None,
    phases: PhaseRules,
    data_dir: Path,
    sources: list[str] | None,
    needed: bool = True,
) -> Earlier:
    """`tables` (what a command works on, read from `sources`) with the earlier matches its model reads:
    `--history` where given, else the data the model was trained on (`known_sources`); not read again where
    they are `sources` themselves, nor at all where not `needed`. A player a file names without a registry
    id is one player with the id his name has in either (`with_registry_ids`), not a second keyed by name.
    Earlier matches that give no delivery are refused in one line naming where they were looked for."""
    earlier, known_from = known_sources(history, encoder)
    notes = dated_ahead(tables)
    if not needed or earlier == sources:
        filled, filling = with_registry_ids(tables.deliveries)
        listed, taken = squads_with_registry_ids(tables.matches, filled)
        filling += [f"registry ids by name: {taken:,} listed players a file named without an id"] if taken else []
        known_from = known_from if needed else ""
        return Earlier(filled, filled, listed, known_from, notes + filling, [])
    archive = load_tables(earlier, phases, data_dir)
    if archive.deliveries.empty:
        named = f"--history {' '.join(history)}" if history else known_from
        raise ValueError(f"{named}: {nothing_found(earlier or [], archive, earlier=True)}")
    filled, filling = with_registry_ids(tables.deliveries, archive.deliveries)
    known = with_registry_ids(known_deliveries(filled, archive.deliveries))[0]
    listed, taken = squads_with_registry_ids(tables.matches, filled, archive.deliveries)
    filling += [f"registry ids by name: {taken:,} listed players a file named without an id"] if taken else []
    matches = pd.concat([listed, archive.matches], ignore_index=True).drop_duplicates("match_id")
    return Earlier(filled, known, matches, known_from, notes + filling, [s.reason for s in archive.skipped])


def nothing_found(sources: list[str], tables: Ingested, earlier: bool = False) -> str:
    """Why the sources gave no delivery to work on, for a command's one-line refusal: the files skipped,
    the matches without deliveries (of the matches a command works on, one not begun is simulate's; of the
    `earlier` matches a model reads, it is no record), or what was there instead of match files."""
    if tables.skipped:
        return f"{len(tables.skipped)} file(s) skipped, first: {tables.skipped[0].reason}"
    m = tables.matches
    if len(m):
        unplayed = m[m["winner"].isna() & m["result"].isna()]  # written before the match, not abandoned
        first = unplayed if len(unplayed) else m
        simulate = "no record in it" if earlier else "cricket-attn-simulate projects it from before its first ball"
        why = f"a match not begun: {simulate}" if len(unplayed) else "no ball bowled, its result recorded"
        return f"{len(m)} match(es) without deliveries (first: match {first['match_id'].iloc[0]}, {why})"
    return f"no Cricsheet match files {MATCH_FILE_KINDS}: found {what_is_in(sources)}"
