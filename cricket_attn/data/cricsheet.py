"""One Cricsheet match file (JSON data versions 1.0.0 and 1.1.0) to validated rows.

Reference: https://cricsheet.org/format/json/. Every field the deliveries table uses is checked
here, so a malformed file fails with a message naming the file, the match and the field.
"""

from __future__ import annotations

import gzip
import io
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import orjson

from cricket_attn.data.competitions import competition_of
from cricket_attn.data.sources import MAX_MATCH_BYTES, MatchFile, MatchFileError, too_large
from cricket_attn.laws import BALLS_PER_OVER, NOT_TEAM_WICKETS, OUTCOME_INDEX, T20_MATCH_TYPES, T20_OVERS

SUPPORTED_MAJOR_VERSION = "1"

# Runs off the bat to class: 5 and 7 (overthrows, all-run fives) share the rare "3" class.
_RUNS_OUTCOME = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 3, 6: 5, 7: 3}

# Cricsheet's extras keys in the order `extras_type` lists them.
EXTRAS_KEYS = ("wides", "noballs", "byes", "legbyes", "penalty")
# The most extras one delivery can plausibly carry (a wide or no-ball run to the boundary, five penalty
# runs, overthrows): the IPL archive's most is 7. More is a corrupt file, not cricket.
MAX_EXTRAS = 15

# Per-delivery columns produced by `parse_match`, in tuple order.
DELIVERY_FIELDS = (
    "innings_pos", "over", "ball_in_over", "delivery_index", "legal_ball_index", "is_legal",
    "batter", "bowler", "non_striker", "batter_id", "bowler_id", "non_striker_id",
    "runs_batter", "runs_extras", "runs_total",
    "runs_wides", "runs_noballs", "runs_byes", "runs_legbyes", "runs_penalty", "runs_non_boundary",
    "extras_type", "wicket_count", "wicket_kind", "player_out", "outcome",
)  # fmt: skip


def _interned(text: str | None) -> str | None:
    return None if text is None else sys.intern(text)


@dataclass
class ParsedMatch:
    """A match's info, its innings and one tuple per delivery (fields as in DELIVERY_FIELDS)."""

    info: dict
    innings: list[dict]
    deliveries: list[tuple]


def season_year(season: object, start: date) -> int:
    """Cricsheet's season as an int: "2013" -> 2013; split seasons ("2020/21") -> the start date's year."""
    if isinstance(season, int) and not isinstance(season, bool):
        return season
    if isinstance(season, str) and re.fullmatch(r"\d{4}", season):
        return int(season)
    if isinstance(season, str) and re.fullmatch(r"\d{4}/\d{2,4}", season):
        return start.year
    raise TypeError(f"expected a year like 2013 or 2020/21, got {season!r}")


def match_before(
    teams: Sequence[str],
    players: Sequence[Sequence[str]],
    venue: str,
    day: date,
    *,
    city: str | None = None,
    toss: tuple[str, str] | None = None,
    event: str | None = None,
    team_type: str = "club",
    match_id: str = "before",
    name: str = "the command line",
) -> MatchFile:
    """A match file in Cricsheet's format holding a match's info alone, as an analyst writes it once the XIs
    are named (`cricket-attn-simulate --teams ... --xi ...`): two sides, each's players in batting order, the
    ground, the day, the toss (winner, "bat" or "field") if it is known, a T20 of six-ball overs. Read by
    `parse_match` as any file is, so it is checked field by field the same way; its players carry no registry
    ids (the commands give a name the one id it has in their data)."""
    info = {
        "balls_per_over": 6,
        "dates": [day.isoformat()],
        "gender": "male",
        "match_type": "T20",
        "overs": 20,
        "players": {team: list(xi) for team, xi in zip(teams, players, strict=True)},
        "season": str(day.year),
        "team_type": team_type,
        "teams": list(teams),
        "venue": venue,
        **({"city": city} if city else {}),
        **({"event": {"name": event}} if event else {}),
        **({"toss": {"winner": toss[0], "decision": toss[1]}} if toss else {}),
    }
    doc = {"meta": {"data_version": "1.1.0"}, "info": info}
    return MatchFile(name, match_id, orjson.dumps(doc))


def parse_match(file: MatchFile) -> ParsedMatch:
    """Parse one match file; a file that is not a readable Cricsheet match is a MatchFileError."""
    raw = file.raw
    if file.compressed:
        try:  # unpacked a bounded read at a time: a small file that unpacks to gigabytes is refused, not held
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unpacked:
                raw = unpacked.read(MAX_MATCH_BYTES + 1)
        except (OSError, EOFError) as err:
            raise MatchFileError(file.name, file.match_id, "(file)", f"not a readable gzip file: {err}") from None
        if len(raw) > MAX_MATCH_BYTES:
            raise MatchFileError(
                file.name, file.match_id, "(file)", "unpacks to " + too_large(f"more than {MAX_MATCH_BYTES:,} bytes")
            )
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:  # Cricsheet's files are UTF-8; say so rather than "line 1 column 1"
            raise MatchFileError(file.name, file.match_id, "(file)", f"not UTF-8 text (byte {bad.start})") from None
        raise MatchFileError(file.name, file.match_id, "(file)", f"invalid JSON: {err}") from None
    if not isinstance(doc, dict) or ("meta" not in doc and "info" not in doc):
        found = (
            f"an object with keys {', '.join(map(str, list(doc)[:5]))}"
            if isinstance(doc, dict)
            else f"a JSON {type(doc).__name__}"
        )
        raise MatchFileError(file.name, file.match_id, "(file)", f"not a Cricsheet match (no meta or info): {found}")
    return _Parser(file).parse(doc)


class _Parser:
    def __init__(self, file: MatchFile):
        self.file = file

    def error(self, field: str, problem: str) -> MatchFileError:
        return MatchFileError(self.file.name, self.file.match_id, field, problem)

    def get(self, obj: dict, key: str, kind: type | tuple, where: str, default=...):
        """`obj[key]` checked to be of `kind`; `default` (if given) when the key is absent."""
        if not isinstance(obj, dict):
            raise self.error(where, f"expected an object, got {type(obj).__name__}")
        if key not in obj:
            if default is ...:
                raise self.error(f"{where}.{key}" if where else key, "missing")
            return default
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, (int, float))):
            name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.error(f"{where}.{key}" if where else key, f"expected {name}, got {value!r}")
        return value

    def parse(self, doc: dict) -> ParsedMatch:
        meta = self.get(doc, "meta", dict, "")
        version = self.get(meta, "data_version", str, "meta")
        if version.split(".")[0] != SUPPORTED_MAJOR_VERSION:
            raise self.error("meta.data_version", f"unsupported data version {version!r} (this reads 1.x)")
        info = self.parse_info(self.get(doc, "info", dict, ""))
        # A file with its info alone (the sides named, no ball bowled) is a match before its first ball.
        innings_list = self.get(doc, "innings", list, "", default=[])
        innings, deliveries = [], []
        for pos, inn in enumerate(innings_list):
            innings.append(self.parse_innings(inn, pos, info, deliveries))
        # Who came into each side during the match (an impact player, a concussion substitute): listed in
        # info.players, not in the XI named at the toss. None where no one did.
        for side in ("team1", "team2"):
            info[f"{side}_came_in"] = ";".join(info["_came_in"].get(info[side], [])) or None
        return ParsedMatch(info=info, innings=innings, deliveries=deliveries)

    def toss_decision(self, toss: dict) -> str | None:
        """What the toss winner chose: "bat" or "field" (None where the file does not say)."""
        decision = self.get(toss, "decision", str, "info.toss", default=None)
        if decision is not None and decision not in ("bat", "field"):
            raise self.error("info.toss.decision", f"{decision!r}: must be 'bat' or 'field'")
        return decision

    def parse_info(self, info: dict) -> dict:
        dates = self.get(info, "dates", list, "info")
        if not dates or not isinstance(dates[0], str):
            raise self.error("info.dates", f"expected a list of dates, got {dates!r}")
        try:
            start = date.fromisoformat(dates[0])
        except ValueError:
            raise self.error("info.dates", f"not a date: {dates[0]!r}") from None
        try:
            season = season_year(self.get(info, "season", (str, int), "info"), start)
        except TypeError as err:
            raise self.error("info.season", str(err)) from None
        if abs(season - start.year) > 1:  # a label and a date this far apart: which one is wrong is not ours to guess
            raise self.error("info.season", f"{season} is more than a year from the match's date {start}")
        teams = self.get(info, "teams", list, "info")
        if len(teams) != 2 or not all(isinstance(t, str) for t in teams):
            raise self.error("info.teams", f"expected two team names, got {teams!r}")
        balls_per_over = self.get(info, "balls_per_over", int, "info")
        if balls_per_over not in BALLS_PER_OVER:
            raise self.error(
                "info.balls_per_over", f"{balls_per_over}: must be {BALLS_PER_OVER[0]} to {BALLS_PER_OVER[-1]}"
            )
        event = self.get(info, "event", dict, "info", default={})
        outcome = self.get(info, "outcome", dict, "info", default={})
        toss = self.get(info, "toss", dict, "info", default={})
        # A winner that names neither side ("Royal Challengers Bangalore" for "Bengaluru") would be read as
        # the other side winning by whatever needs the result: the match is refused by its field instead.
        for field, named in (("info.outcome", outcome), ("info.toss", toss)):
            winner = self.get(named, "winner", str, field, default=None)
            if winner is not None and winner not in teams:
                raise self.error(f"{field}.winner", f"{winner!r} is not one of info.teams {teams}")
        by = self.get(outcome, "by", dict, "info.outcome", default={})
        match_type = self.get(info, "match_type", str, "info")
        overs = self.get(info, "overs", int, "info", default=None)
        if overs is not None and overs <= 0:
            raise self.error("info.overs", f"{overs}: an innings of no overs")
        if overs is not None and match_type in T20_MATCH_TYPES and overs > T20_OVERS:
            overs = T20_OVERS  # nine 20-over T20s of Cricsheet's zip say 50: read as the T20 they are
        registry = self.get(info, "registry", dict, "info", default={})
        players = self.get(info, "players", dict, "info", default={})
        team_type = self.get(info, "team_type", str, "info", default=None)
        event_name = self.get(event, "name", str, "info.event", default=None)
        people = self.get(registry, "people", dict, "info.registry", default={})
        squads, squad_ids = [], []
        for team in teams:
            names = self.get(players, team, list, "info.players", default=[])
            if not all(isinstance(n, str) for n in names):
                raise self.error(f"info.players.{team}", f"expected a list of player names, got {names!r}")
            squads.append(";".join(names) or None)
            ids = [people.get(n) if isinstance(people.get(n), str) else "" for n in names]
            squad_ids.append(";".join(ids) if any(ids) else None)
        return {
            "match_id": self.file.match_id,
            "date": start,
            "season": season,
            "match_type": match_type,
            "gender": self.get(info, "gender", str, "info", default=None),
            "team_type": team_type,
            "event": event_name,
            "competition": competition_of(event_name, team_type, teams),
            "venue": self.get(info, "venue", str, "info", default=None),
            "city": self.get(info, "city", str, "info", default=None),
            "balls_per_over": balls_per_over,
            "scheduled_overs": overs,
            "team1": teams[0],
            "team2": teams[1],
            # Each side's players in the order the file lists them (an impact player included): the simulator's
            # batting order. None when the file has no list.
            "team1_players": squads[0],
            "team2_players": squads[1],
            # Their Cricsheet registry ids, in the same order ("" for a name the registry lacks); None for none.
            "team1_player_ids": squad_ids[0],
            "team2_player_ids": squad_ids[1],
            "toss_winner": self.get(toss, "winner", str, "info.toss", default=None),
            "toss_decision": self.toss_decision(toss),
            "winner": self.get(outcome, "winner", str, "info.outcome", default=None),
            "win_by_runs": self.get(by, "runs", int, "info.outcome.by", default=None),
            "win_by_wickets": self.get(by, "wickets", int, "info.outcome.by", default=None),
            "result": self.get(outcome, "result", str, "info.outcome", default=None),
            "method": self.get(outcome, "method", str, "info.outcome", default=None),
            "eliminator": self.get(outcome, "eliminator", str, "info.outcome", default=None),
            "_people": people,
            "_came_in": {},  # team -> who came in during the match (`replacements`), filled by its innings
        }

    def parse_innings(self, inn: dict, pos: int, info: dict, out: list[tuple]) -> dict:
        where = f"innings[{pos}]"
        team = self.get(inn, "team", str, where)
        if team not in (info["team1"], info["team2"]):
            raise self.error(f"{where}.team", f"{team!r} is not one of info.teams")
        target = self.get(inn, "target", dict, where, default={})
        innings = {
            "innings": pos + 1,
            "is_super_over": self.get(inn, "super_over", bool, where, default=False),
            "batting_team": team,
            "bowling_team": info["team2"] if team == info["team1"] else info["team1"],
            "target_runs": self.get(target, "runs", int, f"{where}.target", default=None),
            "target_overs": self.get(target, "overs", (int, float), f"{where}.target", default=None),
        }
        people = info["_people"]
        # A forfeited innings has no overs at all.
        overs = self.get(inn, "overs", list, where, default=[])
        delivery_index = 0
        legal_ball_index = 0
        legal_at = {}  # (over, delivery's place in it, 1-based) -> the innings' legal ball it is or precedes
        for i, over_doc in enumerate(overs):
            over = self.get(over_doc, "over", int, f"{where}.overs[{i}]")
            legal_in_over = 0
            for j, d in enumerate(self.get(over_doc, "deliveries", list, f"{where}.overs[{i}]")):
                at = f"{where}.overs[{i}].deliveries[{j}]"
                legal_at[over, j + 1] = legal_ball_index
                runs = self.get(d, "runs", dict, at)
                batter_runs = self.get(runs, "batter", int, f"{at}.runs")
                extra_runs = self.get(runs, "extras", int, f"{at}.runs")
                total_runs = self.get(runs, "total", int, f"{at}.runs")
                for name, value in (("batter", batter_runs), ("extras", extra_runs)):
                    if value < 0:
                        raise self.error(f"{at}.runs.{name}", f"negative: {value}")
                if extra_runs > MAX_EXTRAS:
                    raise self.error(f"{at}.runs.extras", f"{extra_runs} extras off one ball is not possible")
                if total_runs != batter_runs + extra_runs:
                    raise self.error(f"{at}.runs", f"batter {batter_runs} + extras {extra_runs} != total {total_runs}")
                extras = self.get(d, "extras", dict, at, default={})
                extra_by_kind = [0] * len(EXTRAS_KEYS)
                for key in extras:
                    if key not in EXTRAS_KEYS:
                        raise self.error(f"{at}.extras.{key}", "unknown kind of extra")
                    value = self.get(extras, key, int, f"{at}.extras")
                    if not 0 <= value <= MAX_EXTRAS:
                        raise self.error(f"{at}.extras.{key}", f"{value} is not a number of runs one ball can give")
                    extra_by_kind[EXTRAS_KEYS.index(key)] = value
                if sum(extra_by_kind) != extra_runs:
                    kinds = " + ".join(f"{k} {v}" for k, v in zip(EXTRAS_KEYS, extra_by_kind) if k in extras) or "none"
                    raise self.error(f"{at}.extras", f"{kinds} != runs.extras {extra_runs}")
                # Names are interned: a player's name is one string however many balls he faces, which
                # keeps a table of millions of deliveries to a fraction of the memory while it is built.
                batter = sys.intern(self.get(d, "batter", str, at))
                bowler = sys.intern(self.get(d, "bowler", str, at))
                non_striker = sys.intern(self.get(d, "non_striker", str, at))

                self.parse_replacements(d, at, info)
                kinds, outs = [], []
                team_wickets = 0
                for k, w in enumerate(self.get(d, "wickets", list, at, default=[])):
                    kind = self.get(w, "kind", str, f"{at}.wickets[{k}]")
                    kinds.append(kind)
                    outs.append(self.get(w, "player_out", str, f"{at}.wickets[{k}]"))
                    team_wickets += kind not in NOT_TEAM_WICKETS

                # Wides and no-balls must be bowled again: they are not legal balls, so they take
                # the number of the legal ball that follows them.
                is_legal = "wides" not in extras and "noballs" not in extras
                if team_wickets:
                    outcome = OUTCOME_INDEX["wicket"]
                elif "wides" in extras:
                    outcome = OUTCOME_INDEX["wide"]
                elif "noballs" in extras:
                    outcome = OUTCOME_INDEX["noball"]
                elif ("byes" in extras or "legbyes" in extras) and batter_runs == 0:
                    outcome = OUTCOME_INDEX["bye"]
                elif batter_runs in _RUNS_OUTCOME:
                    outcome = _RUNS_OUTCOME[batter_runs]
                else:
                    raise self.error(f"{at}.runs.batter", f"{batter_runs} runs off one ball is not possible")

                out.append(
                    (
                        pos,
                        over,
                        legal_in_over + 1,
                        delivery_index,
                        legal_ball_index,
                        is_legal,
                        batter,
                        bowler,
                        non_striker,
                        _interned(people.get(batter)),
                        _interned(people.get(bowler)),
                        _interned(people.get(non_striker)),
                        batter_runs,
                        extra_runs,
                        total_runs,
                        *extra_by_kind,
                        bool(runs.get("non_boundary", False)),
                        _interned("+".join(key for key in EXTRAS_KEYS if key in extras) or None),
                        team_wickets,
                        _interned(";".join(kinds) or None),
                        _interned(";".join(outs) or None),
                        outcome,
                    )
                )
                delivery_index += 1
                legal_in_over += is_legal
                legal_ball_index += is_legal
        innings["powerplays"] = self.parse_powerplays(inn, where, info["balls_per_over"], legal_at)
        return innings

    def parse_replacements(self, d: dict, at: str, info: dict) -> None:
        """A delivery's `replacements.match`: a player who came into a side during the match, kept by side in
        `info["_came_in"]` (`replacements.role`, a batter's runner or a captain's stand-in, changes no XI)."""
        replacements = self.get(d, "replacements", dict, at, default={})
        for k, r in enumerate(self.get(replacements, "match", list, f"{at}.replacements", default=[])):
            where = f"{at}.replacements.match[{k}]"
            team, came_in = self.get(r, "team", str, where), self.get(r, "in", str, where)
            if team not in (info["team1"], info["team2"]):
                raise self.error(f"{where}.team", f"{team!r} is not one of info.teams")
            if came_in not in info["_came_in"].setdefault(team, []):
                info["_came_in"][team].append(came_in)

    def parse_powerplays(self, inn: dict, where: str, balls_per_over: int, legal_at: dict) -> str:
        """The innings' fielding-restriction windows as Cricsheet records them (`powerplays`: from and to in
        over.delivery notation, 0.1-5.6 for a T20's six overs; the Big Bash's four, 0.1-3.6, and its batting
        Power Surge, e.g. 14.1-15.6; shortened ones after rain), as legal-ball ranges of the innings,
        "first-last" (0-based, inclusive) joined by ";", for `PhaseRules.assign`. "" when none is recorded.
        A mandatory window counts only from the innings' first ball (a later "mandatory" block is a
        fielding rule of the middle overs, not a powerplay); batting and bowling ones count where taken."""
        windows = []
        for k, window in enumerate(self.get(inn, "powerplays", list, where, default=[])):
            at = f"{where}.powerplays[{k}]"
            kind = self.get(window, "type", str, at, default="mandatory")
            ends = []
            for key in ("from", "to"):
                value = self.get(window, key, (int, float), at)
                over, _, place = repr(float(value)).partition(".")
                if not (0 <= value < 1000 and over.isdigit() and place.isdigit() and int(place) >= 1):
                    raise self.error(f"{at}.{key}", f"{value!r} is not a ball in over.delivery notation (0.1 on)")
                over, place = int(over), int(place)
                if key == "to" and place == 1 and (over, 10) in legal_at:
                    place = 10  # JSON reads "5.10" (an over's tenth delivery) as 5.1
                # A ball the innings never reached (it ended first) is counted as if the over had no extras.
                ends.append(legal_at.get((over, place), over * balls_per_over + min(place, balls_per_over) - 1))
            if ends[1] < ends[0]:
                raise self.error(at, f"ends at {window['to']!r} before it starts at {window['from']!r}")
            if kind != "mandatory" or ends[0] == 0:
                windows.append(f"{ends[0]}-{ends[1]}")
        return ";".join(windows)
