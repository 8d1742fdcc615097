"""What is known before each ball is bowled: the match state, and players' shrunk outcome rates.

Every feature of delivery t uses only deliveries before t in its innings (or, for a chase, the
target set by the first innings), plus who bats and bowls ball t. Rates are fitted on training
deliveries only. Shared by the transformer's sequences and the tabular baselines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from cricket_attn.laws import N_OUTCOMES, OUTCOME_INDEX, OUTCOMES, bowler_wickets, outcome_codes

RATE_COLUMNS = ("batter", "bowler", "venue", "competition")  # whose outcome rates the models get
OUT_OF_FOLD = ("batter", "bowler", "venue")  # whose rates a training ball gets from other matches only
PLAYER_ROLES = ("batter", "bowler", "non_striker")


# Ground names that several grounds share: a key of one of them takes its city too (Brighton is Hove's).
SHARED_GROUND_NAMES = frozenset(
    {"ACA Stadium", "Airforce Complex ground", "County Ground", "Gymkhana Club Ground", "National Stadium",
     "Queen's Park"}
)  # fmt: skip
CITY_ALIASES = {"Brighton": "Hove"}


# conf/data's `rate_strength`, the default of every fit of players' and venues' rates (tests/test_config holds
# them equal).
RATE_STRENGTH = 200.0


def venue_key(venues: pd.Series, cities: pd.Series | None = None) -> np.ndarray:
    """A ground as one key however a file writes it: the name before any comma (Cricsheet adds the city
    in later files: `Wankhede Stadium, Mumbai`), dots as spaces (`M.Chinnaswamy`), one space between words;
    a name several grounds share (`County Ground`) with its city (the file's `city`, else the text after the
    comma), so Bristol's and Taunton's stay apart."""
    parts = venues.astype(str).str.split(",", n=1)
    name = parts.str[0].str.replace(".", " ", regex=False).str.split().str.join(" ")
    after = parts.str[1].astype(object).fillna("").astype(str).str.rsplit(",", n=1).str[-1].str.strip()
    after = after.where(after != "", None)
    city = after if cities is None else cities.astype(object).where(cities.notna(), after)
    city = city.replace(CITY_ALIASES)
    shared = name.isin(SHARED_GROUND_NAMES) & city.notna()
    return name.where(~shared, name + ", " + city.astype(str)).to_numpy(dtype=object)


def entity_key(d: pd.DataFrame, column: str) -> np.ndarray:
    """Who or what a delivery's `column` is, the same across every league and file: a player by his
    Cricsheet registry id (two players can share a name; one player's name can change), by name where a
    file gives no id; a venue by `venue_key`; anything else (a competition, a team type) as written."""
    if column in PLAYER_ROLES:
        names = d[column].astype(str).to_numpy(dtype=object)
        if f"{column}_id" not in d.columns:
            return names
        given = d[f"{column}_id"]
        ids = given.astype(object).where(given.notna(), "").to_numpy()  # None, NaN or pd.NA: no id
        return np.where(ids == "", names, ids).astype(object)
    if column == "venue":  # worked out once per (venue, city) as written: a few thousand, not millions
        written = d[["venue", "city"] if "city" in d else ["venue"]].astype(object)
        code = written.groupby(list(written.columns), sort=False, dropna=False).ngroup().to_numpy()
        pairs = written.drop_duplicates()  # in order of first appearance, as the group numbers
        return venue_key(pairs["venue"], pairs["city"] if "city" in pairs else None)[code]
    return d[column].astype(str).to_numpy(dtype=object)


def ids_by_name(*deliveries: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Name -> the one registry id a name has among the deliveries' players (names with one id only), and
    name -> how many ids it has."""
    pairs = pd.concat(
        [
            r[[c, f"{c}_id"]].drop_duplicates().astype(object).set_axis(["name", "id"], axis=1)
            for r in deliveries
            for c in PLAYER_ROLES
            if f"{c}_id" in r
        ]
    )
    pairs = pairs[pairs["id"].notna() & (pairs["id"] != "")].drop_duplicates()
    ids = pairs.groupby("name")["id"].nunique()
    single = pairs[pairs["name"].isin(ids.index[ids == 1])].drop_duplicates("name").set_index("name")["id"]
    return single, ids


def squads_with_registry_ids(matches: pd.DataFrame, *deliveries: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """`matches` with each listed player a file names without a registry id (`teamN_player_ids` empty for him)
    given the one id his name has among `deliveries` (`with_registry_ids`' rule, for the sides as listed: a
    match not begun has no ball to carry ids, a match in progress lists players yet to bat); and how many were
    given one."""
    if matches.empty or "team1_players" not in matches:
        return matches, 0
    single, out, taken = None, matches.copy(), 0
    for side in ("team1", "team2"):
        filled = []
        written = out[f"{side}_player_ids"] if f"{side}_player_ids" in out else [None] * len(out)
        for names, keys in zip(out[f"{side}_players"], written):
            listed = names.split(";") if isinstance(names, str) else []
            known = keys.split(";") if isinstance(keys, str) else [""] * len(listed)
            if all(known):  # every listed player has his id (Cricsheet's files), or none is listed
                filled.append(keys)
                continue
            if single is None:  # looked up once, and only where a name lacks its id
                single, _ = ids_by_name(*deliveries)
            given = [k or single.get(n, "") for n, k in zip(listed, known)]
            taken += sum(bool(g) and not k for g, k in zip(given, known))
            filled.append(";".join(given) if any(given) else None)
        out[f"{side}_player_ids"] = filled
    return out, taken


def with_registry_ids(d: pd.DataFrame, *references: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """`d` with each player written without a registry id (a file without `info.registry`) given the one id
    his name has among the deliveries of `d` and `references`, so that he is one player, not a second keyed
    by name; a name with several ids stays by name. Also a line each for what was done, for a summary."""
    single, ids = ids_by_name(d, *references)
    out, taken, ambiguous = d, 0, set()
    for role in PLAYER_ROLES:
        if f"{role}_id" not in d:
            continue
        written = d[f"{role}_id"].astype(object)
        missing = written.isna() | (written == "")
        if not missing.any():
            continue
        names = d.loc[missing, role].astype(str)
        found = names.map(single)
        ambiguous |= set(names[names.isin(ids.index[ids > 1])])
        if found.notna().any():
            out = out.copy() if out is d else out
            filled = written.copy()
            filled[found.index[found.notna()]] = found.dropna()
            out[f"{role}_id"] = filled.astype("category")
            taken += int(found.notna().sum())
    notes = [f"registry ids by name: {taken:,} ball-roles of players a file named without an id"] if taken else []
    notes += [f"{name}: several registry ids in the data; kept by name" for name in sorted(ambiguous)]
    return out, notes


# Numeric match-state columns made by `match_state`, in order.
STATE_COLUMNS = (
    "runs_before", "wickets_before", "legal_balls_before", "balls_left", "run_rate",
    "is_chase", "runs_needed", "required_rate", "target",
    "batter_runs_before", "batter_balls_before",
    "bowler_balls_before", "bowler_runs_before", "bowler_wickets_before",
    "partnership_runs", "partnership_balls", "after_noball",
    "last6_runs", "last6_dots", "last6_boundaries", "last6_wickets", "last6_extras",
    "ball_in_over", "season_index",
)  # fmt: skip


def innings_key(d: pd.DataFrame) -> np.ndarray:
    """An integer per (match, innings), in table order."""
    return d.groupby(["match_id", "innings"], sort=False, observed=True).ngroup().to_numpy()


def innings_balls(d: pd.DataFrame) -> np.ndarray:
    """Legal balls each delivery's innings may last: a chase has its (possibly DLS-reduced) target
    overs, else the scheduled overs (20 when the file gives neither). Overs like 12.3 are 12 overs
    and 3 balls."""
    overs = d["target_overs"].astype("Float64").fillna(d["scheduled_overs"].astype("Float64")).fillna(20.0)
    overs = overs.to_numpy(dtype=float)
    return np.floor(overs) * d["balls_per_over"].to_numpy() + np.round((overs - np.floor(overs)) * 10)


def innings_extent(d: pd.DataFrame) -> pd.DataFrame:
    """Per regular innings (rows: match_id, innings), how far it reaches in each position a model embeds:
    `deliveries`, `legal_balls` (the legal-ball positions it reaches: one more than were bowled where it
    ends on a wide or a no-ball), `overs`, `balls_in_over` (the longest over's legal balls and
    extras' numbering), and `scheduled_balls`, the legal balls it may last (`innings_balls`). Super overs
    are left out, as the models leave them."""
    regular = d[~d["is_super_over"].astype(bool)]
    extent = regular.assign(
        legal_balls=regular["legal_ball_index"] + 1, overs=regular["over"] + 1, scheduled_balls=innings_balls(regular)
    )
    return extent.groupby(["match_id", "innings"], observed=True, sort=False).agg(
        deliveries=("over", "size"),
        legal_balls=("legal_balls", "max"),
        overs=("overs", "max"),
        balls_in_over=("ball_in_over", "max"),
        scheduled_balls=("scheduled_balls", "max"),
    )


def _before(values: pd.Series, groups: Sequence) -> pd.Series:
    """Sum of `values` over earlier rows of the same group (exclusive cumulative sum)."""
    return values.groupby(groups, sort=False, observed=True).cumsum() - values


FIRST_SEASON = 2008  # season_index counts seasons from the IPL's first
RECENT = 6  # the last6_* features sum up this many deliveries: their runs, dots, boundaries, wickets, extras
RECENT_COLUMNS = ("last6_runs", "last6_dots", "last6_boundaries", "last6_wickets", "last6_extras")


def ball_counts(outcome, runs_total, runs_batter, runs_wides, runs_noballs, bowler_wicket) -> dict:
    """What each delivery adds to the running counts the match state is made of (numpy arrays or torch
    tensors, one value per delivery; `outcome` the class code). The deliveries table's cumulative sums
    (`match_state`) and the simulator's state (`InningsState.record`) both take them from here."""
    wide = (runs_wides > 0) | (outcome == OUTCOME_INDEX["wide"])
    return {
        "runs": runs_total,
        "faced": ~wide,  # a wide is not a ball faced
        "conceded": runs_batter + runs_wides + runs_noballs,  # byes and leg-byes are not the bowler's
        "bowler_wickets": bowler_wicket,
        "dots": outcome == OUTCOME_INDEX["dot"],
        "boundaries": (outcome == OUTCOME_INDEX["4"]) | (outcome == OUTCOME_INDEX["6"]),
        "extras": (outcome == OUTCOME_INDEX["wide"]) | (outcome == OUTCOME_INDEX["noball"]),
    }


def state_matrix(counted: dict, innings_balls, balls_per_over, target, season, last_season: int | None) -> torch.Tensor:
    """(N, len(STATE_COLUMNS)) float64: the match state from its running counts (`counted`: every column of
    STATE_COLUMNS but those made here) and what the innings is: how many legal balls it may last, the balls
    per over, the target (0: none) and the season, capped at `last_season` so that the models never
    extrapolate a trend they have not seen. Training's features and the simulator's state are both made here."""
    f64 = lambda x: torch.as_tensor(x, dtype=torch.float64)
    runs, legal, bpo, target = (
        f64(x) for x in (counted["runs_before"], counted["legal_balls_before"], balls_per_over, target)
    )
    balls_left = (f64(innings_balls) - legal).clamp(min=0)
    chase = target > 0
    needed = torch.where(chase, target - runs, 0.0)
    season = f64(season) if last_season is None else f64(season).clamp(max=last_season)
    columns = {
        **counted,
        "balls_left": balls_left,
        "run_rate": runs / legal.clamp(min=1) * bpo,
        "is_chase": chase,
        "runs_needed": needed,
        "required_rate": torch.where(chase, (needed / balls_left.clamp(min=1) * bpo).clamp(-6, 36), 0.0),
        "target": target,
        "season_index": season - FIRST_SEASON,
    }
    return torch.stack([f64(columns[c]).expand(len(runs)) for c in STATE_COLUMNS], 1)


def match_state(d: pd.DataFrame, last_season: int | None = None) -> pd.DataFrame:
    """Pre-ball match state of every delivery (columns STATE_COLUMNS): each delivery's counts
    (`ball_counts`) summed over the earlier deliveries of its innings, then `state_matrix`."""
    inn = innings_key(d)
    code = outcome_codes(d)
    adds = ball_counts(
        code,
        d["runs_total"].to_numpy(np.int64),
        d["runs_batter"].to_numpy(np.int64),
        d["runs_wides"].to_numpy(np.int64),
        d["runs_noballs"].to_numpy(np.int64),
        bowler_wickets(d),
    )
    adds = {name: pd.Series(np.asarray(v, dtype=np.int64), index=d.index) for name, v in adds.items()}
    legal = d["is_legal"].astype(np.int64)
    wickets = d["wicket_count"].astype(np.int64)
    counted = {
        "runs_before": _before(adds["runs"], inn),
        "wickets_before": _before(wickets, inn),
        "legal_balls_before": d["legal_ball_index"],
    }
    batter_key = [inn, d["batter"].astype(str).to_numpy()]
    counted["batter_runs_before"] = _before(d["runs_batter"].astype(np.int64), batter_key)
    counted["batter_balls_before"] = _before(adds["faced"], batter_key)
    bowler_key = [inn, d["bowler"].astype(str).to_numpy()]
    counted["bowler_balls_before"] = _before(legal, bowler_key)
    counted["bowler_runs_before"] = _before(adds["conceded"], bowler_key)
    counted["bowler_wickets_before"] = _before(adds["bowler_wickets"], bowler_key)
    stand = [inn, counted["wickets_before"].to_numpy()]
    counted["partnership_runs"] = _before(adds["runs"], stand)
    counted["partnership_balls"] = _before(legal, stand)
    # A no-ball is followed by a free hit: the batter cannot be out bowled or caught.
    counted["after_noball"] = d["outcome"].eq("noball").groupby(inn, sort=False).shift(1, fill_value=False)
    recent = (adds["runs"], adds["dots"], adds["boundaries"], wickets, adds["extras"])
    for name, values in zip(RECENT_COLUMNS, recent):
        so_far = _before(values, inn)
        counted[name] = so_far - so_far.groupby(inn, sort=False).shift(RECENT, fill_value=0)
    counted["ball_in_over"] = d["ball_in_over"]
    counted = {name: torch.from_numpy(np.asarray(v, dtype=np.float64)) for name, v in counted.items()}
    state = state_matrix(
        counted,
        innings_balls(d),
        d["balls_per_over"].to_numpy(copy=True),
        d["target_runs"].astype("Float64").fillna(0).to_numpy(dtype=float, copy=True),
        d["season"].to_numpy(copy=True),
        last_season,
    )
    return pd.DataFrame(state.numpy().astype(np.float32), columns=list(STATE_COLUMNS), index=d.index)


def match_folds(d: pd.DataFrame, n_folds: int, seed: int = 0) -> np.ndarray:
    """A fold number in 0..n_folds-1 per row, the same for every ball of a match: held-out folds are
    whole matches, so no row is fitted on balls of its own match."""
    matches = d["match_id"].astype(str).unique()
    fold_of = dict(zip(matches, np.random.default_rng(seed).permutation(len(matches)) % n_folds))
    return d["match_id"].astype(str).map(fold_of).to_numpy()


@dataclass
class OutcomeRates:
    """Each player's (or venue's) outcome distribution, shrunk towards the overall one.

    rate = (counts + strength * prior) / (n + strength); given as log(rate / prior), plus
    log(1 + n) so a model can tell a known player from a newcomer. Keys never seen get the prior.
    Keyed by `entity_key` (registry ids, venue keys).
    """

    column: str
    strength: float = RATE_STRENGTH
    prior: np.ndarray = field(default=None, repr=False)
    counts: pd.DataFrame = field(default=None, repr=False)

    def keys(self, d: pd.DataFrame) -> np.ndarray:
        return entity_key(d, self.column)

    def fit(self, d: pd.DataFrame) -> OutcomeRates:
        codes = outcome_codes(d)
        keys = self.keys(d)
        table = pd.crosstab(keys, codes).reindex(columns=range(N_OUTCOMES), fill_value=0)
        self.counts = table.astype(np.float64)
        total = table.to_numpy().sum(axis=0)
        self.prior = (total + 1) / (total.sum() + N_OUTCOMES)
        return self

    def transform(self, d: pd.DataFrame) -> np.ndarray:
        keys = self.keys(d)
        counts = self.counts.reindex(keys).fillna(0).to_numpy()
        n = counts.sum(axis=1, keepdims=True)
        rate = (counts + self.strength * self.prior) / (n + self.strength)
        return np.hstack([np.log(rate / self.prior), np.log1p(n)]).astype(np.float32)

    def out_of_fold(self, d: pd.DataFrame, n_folds: int = 5, seed: int = 0) -> np.ndarray:
        """Rates for the rows of `d` from the other folds' matches of `d`, so no row sees its own outcome.
        A competition's rates are its fitted ones: its own ball is a negligible share of its thousands, and
        a rate that moved from fold to fold would be noise the scaled features magnify (one competition
        is a column of one value)."""
        if self.column not in OUT_OF_FOLD:
            return self.transform(d)
        fold = match_folds(d, n_folds, seed)
        out = np.zeros((len(d), N_OUTCOMES + 1), dtype=np.float32)
        for k in range(n_folds):
            held = fold == k
            part = OutcomeRates(self.column, self.strength).fit(d[~held])
            out[held] = part.transform(d[held])
        return out


@dataclass
class TabularFeatures:
    """Handcrafted pre-ball features: the match state, the over, and players' and venues' shrunk
    outcome rates (target encodings) fitted on the fitting seasons only, out of fold for their rows."""

    rates: dict[str, OutcomeRates]
    last_season: int

    @classmethod
    def fit_transform(cls, fit_on: pd.DataFrame, strength: float) -> tuple[TabularFeatures, np.ndarray]:
        feats = cls({c: OutcomeRates(c, strength).fit(fit_on) for c in RATE_COLUMNS}, int(fit_on["season"].max()))
        return feats, feats._matrix(fit_on, [r.out_of_fold(fit_on) for r in feats.rates.values()])

    def transform(self, d: pd.DataFrame) -> np.ndarray:
        return self._matrix(d, [r.transform(d) for r in self.rates.values()])

    def _matrix(self, d: pd.DataFrame, rates: list[np.ndarray]) -> np.ndarray:
        state = match_state(d, self.last_season).to_numpy()
        return np.hstack([state, d[["over"]].to_numpy(dtype=np.float32), *rates]).astype(np.float32)

    @staticmethod
    def names() -> list[str]:
        rates = [f"{c}_{kind}" for c in RATE_COLUMNS for kind in [*OUTCOMES, "log_n"]]
        return [*STATE_COLUMNS, "over", *rates]
