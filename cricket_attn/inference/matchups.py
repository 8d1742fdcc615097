"""Matchups: a batter against bowlers (or a bowler against batters), the model's per-ball view beside the pair's
raw record.

The model's view of X facing Y in a phase, at a venue, as of a date: real situations of that phase (balls of the
competition's latest season before the date, drawn with a seed), each innings up to that ball with its striker
played by X and its bowler by Y throughout (X has the balls the real striker had faced, Y the overs the real
bowler had bowled), at the venue and on the date asked; the model's distribution of that ball, averaged over the
situations: runs a delivery, the chance of a wicket, of a boundary (a 4 or a 6 off the bat).

The raw record: every delivery X faced from Y before the date, in any competition of the data, with 95%
intervals (runs a delivery: a normal interval over deliveries; the chances: Wilson's). A few dozen deliveries
make a wide interval; the model pools everything it knows of both players. Where the model's figure lies outside
the record's interval, the row says so (`disagree`).

`pair_baseline` is the yardstick of issue 55's matchup floor: each ball's distribution from the pair's raw
record before its day, shrunk towards the mean of the batter's and the bowler's own records before the day.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import pandas as pd

from cricket_attn.data.deliveries import PHASES
from cricket_attn.data.features import entity_key, venue_key
from cricket_attn.laws import N_OUTCOMES, OUTCOME_INDEX, OUTCOME_RUNS, outcome_codes
from cricket_attn.metrics import PROB_COLUMNS, save_figure, wilson_interval

FIGURES = ("runs", "wicket", "boundary")  # a delivery's runs (extras in), P(wicket), P(4 or 6 off the bat)
BOUNDARY = [OUTCOME_INDEX["4"], OUTCOME_INDEX["6"]]
WICKET = OUTCOME_INDEX["wicket"]
Z = 1.959964
STRENGTHS = (10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0)  # the pair baseline's shrinkage, in deliveries: chosen


class MatchupError(ValueError):
    """A matchup that cannot be worked out (a player not in the data, no situation of a phase): one line."""


def figures_of(probs: np.ndarray) -> dict[str, np.ndarray]:
    """FIGURES of each row of outcome distributions (N, classes) or one-hot outcomes."""
    return {"runs": probs @ OUTCOME_RUNS, "wicket": probs[:, WICKET], "boundary": probs[:, BOUNDARY].sum(axis=1)}


def player_key(d: pd.DataFrame, role: str, name: str) -> str:
    """The key (`entity_key`) of the player named `name` in `role` (batter or bowler): his registry id, the one
    most recently written with that name."""
    rows = d[d[role].astype(str) == name]
    if rows.empty:
        raise MatchupError(f"{role} {name!r}: not in the data (names as the match files write them)")
    return str(entity_key(rows.iloc[[-1]], role)[0])


def check_setting(d: pd.DataFrame, date, venue: str, city: str | None, competition: str) -> None:
    """Refuse in one line naming the field a date before the data's first match, a competition or a ground
    (as `venue_key` knows grounds: the name before a comma, with the city where grounds share a name) with no
    ball in the data before the date: a slip in a name, the data's closest names offered."""
    day = pd.Timestamp(date)
    earlier = d[d["date"] < day]
    if earlier.empty:
        first = pd.Timestamp(d["date"].min()).date() if len(d) else None
        raise MatchupError(f"date {day.date()}: before the data's first match ({first}): no record yet")
    ground = venue_key(pd.Series([venue]), pd.Series([city]) if city else None)[0]
    places = earlier[["venue", "city"]].astype(object).drop_duplicates()  # a key per place, not per ball
    for field, name, known in (
        ("competition", competition, earlier["competition"].astype(str) == competition),
        ("venue", venue, venue_key(places["venue"], places["city"]) == ground),
    ):
        if not known.any():
            close = difflib.get_close_matches(name, earlier[field].astype(str).unique().tolist(), n=3)
            hint = f"; closest: {', '.join(map(repr, close))}" if close else ""
            raise MatchupError(f"{field} {name!r}: no ball of it in the data before {day.date()}{hint}")


def situations(d: pd.DataFrame, competition: str, phase: str, before, n: int, seed: int) -> pd.DataFrame:
    """Up to n balls of `phase` in `competition`'s latest season before the date `before`, drawn with `seed`:
    their match_id, innings and delivery_index."""
    mine = d[(d["competition"].astype(str) == competition) & (d["date"] < pd.Timestamp(before))]
    mine = mine[(mine["phase"].astype(str) == phase) & ~mine["is_super_over"].astype(bool)]
    if mine.empty:
        raise MatchupError(f"phase {phase!r}: no ball of {competition} before {pd.Timestamp(before).date()}")
    latest = mine[mine["season"] == mine["season"].max()]
    return latest.sample(min(n, len(latest)), random_state=seed)[["match_id", "innings", "delivery_index"]]


def _as(prefix: pd.DataFrame, roles: tuple[str, ...], real: str, name: str, key: str) -> None:
    """Put `name` (registry id `key`) wherever the real player `real` is named in `roles` of `prefix`."""
    for role in roles:
        at = prefix[role].astype(str) == real
        for column, value in ((role, name), (f"{role}_id", key)):
            if column in prefix:  # as text: a name not among a categorical column's categories
                prefix[column] = prefix[column].astype(object)
                prefix.loc[at, column] = value


def matchup_innings(
    d: pd.DataFrame,
    points: pd.DataFrame,
    batter: tuple[str, str],
    bowler: tuple[str, str],
    venue: str,
    city: str | None,
    date,
    tag: str,
) -> pd.DataFrame:
    """One innings per situation in `points`, up to its ball, with the ball's striker played by `batter` and its
    bowler by `bowler` (each (name, key)) throughout, at `venue` on `date`: a deliveries table whose match ids
    are `tag` and the situation's number. A situation where either player is on the field already is left out."""
    by_innings = d.groupby([d["match_id"].astype(str), "innings"], sort=False, observed=True)
    out = []
    for i, (match_id, number, index) in enumerate(points.itertuples(index=False)):
        inn = by_innings.get_group((str(match_id), number))
        prefix = inn[inn["delivery_index"] <= index].copy()
        last = prefix.iloc[-1]
        on_field = set(prefix[["batter", "non_striker", "bowler"]].astype(str).to_numpy().ravel())
        if {batter[0], bowler[0]} & on_field:
            continue
        _as(prefix, ("batter", "non_striker", "player_out"), str(last["batter"]), *batter)
        _as(prefix, ("bowler",), str(last["bowler"]), *bowler)
        prefix["match_id"] = f"{tag}-{i}"
        prefix["venue"], prefix["date"], prefix["season"] = venue, pd.Timestamp(date), pd.Timestamp(date).year
        if "city" in prefix:
            prefix["city"] = city
        out.append(prefix)
    return pd.concat(out, ignore_index=True) if out else d.iloc[:0]


def raw_record(d: pd.DataFrame, batter_key: str, bowler_key: str, before, phase: str | None = None) -> dict:
    """The deliveries the batter faced from the bowler before the date (regular innings, any competition; one
    phase, or every phase with None): how many, and each of FIGURES with its 95% interval."""
    at = (
        (entity_key(d, "batter") == batter_key)
        & (entity_key(d, "bowler") == bowler_key)
        & (d["date"] < pd.Timestamp(before)).to_numpy()
        & ~d["is_super_over"].astype(bool).to_numpy()
    )
    if phase is not None:
        at &= (d["phase"].astype(str) == phase).to_numpy()
    codes = outcome_codes(d[at])
    values = figures_of(np.eye(N_OUTCOMES)[codes]) if len(codes) else {f: np.zeros(0) for f in FIGURES}
    out = {"raw_deliveries": len(codes)}
    for figure, x in values.items():
        n = len(x)
        mean = x.mean() if n else np.nan
        if figure == "runs":
            half = Z * x.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
            low, high = mean - half, mean + half
        else:  # a chance
            low, high = wilson_interval(mean, n, Z)
        out |= {f"raw_{figure}": mean, f"raw_{figure}_low": max(low, 0.0), f"raw_{figure}_high": high}
    return out


def matchup_table(
    trained,
    d: pd.DataFrame,
    batters: list[str],
    bowlers: list[str],
    date,
    venue: str,
    city: str | None,
    competition: str,
    phases: list[str] | None = None,
    n: int = 100,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per batter, bowler and phase (and the pair's whole record beside it): the model's view (FIGURES,
    over the situations it was worked out on) and the raw record (`raw_record`), `disagree` where the model's
    figure is outside the record's interval. `trained` reads every match of `d` before the date (its records
    and histories attached from `d`)."""
    phases = list(phases or PHASES)
    check_setting(d, date, venue, city, competition)
    keys = {("batter", b): player_key(d, "batter", b) for b in batters}
    keys |= {("bowler", b): player_key(d, "bowler", b) for b in bowlers}
    points = {p: situations(d, competition, p, date, n, seed) for p in phases}
    # Read the whole table once: the situations' innings, and the deliveries between the players asked.
    chosen = pd.concat(points.values())
    innings = d.set_index([d["match_id"].astype(str), "innings"]).index
    around = d[innings.isin(pd.MultiIndex.from_arrays([chosen["match_id"].astype(str), chosen["innings"]]))]
    met = d[
        np.isin(entity_key(d, "batter"), [keys[("batter", b)] for b in batters])
        & np.isin(entity_key(d, "bowler"), [keys[("bowler", b)] for b in bowlers])
    ]
    tables, pairs = [], []
    for x in batters:
        for y in bowlers:
            for p in phases:
                tag = f"matchup-{len(pairs)}"
                pairs.append((x, y, p, tag))
                bat, bowl = (x, keys[("batter", x)]), (y, keys[("bowler", y)])
                tables.append(matchup_innings(around, points[p], bat, bowl, venue, city, date, tag))
    synthetic = pd.concat(tables, ignore_index=True)
    if not trained.encoder.known_attached:
        trained.encoder.attach_known(d)
    scored = trained.score(synthetic) if len(synthetic) else synthetic
    last = scored.groupby("match_id", sort=False).tail(1) if len(scored) else scored
    rows = []
    for x, y, p, tag in pairs:
        mine = last[last["match_id"].astype(str).str.rsplit("-", n=1).str[0] == tag] if len(last) else last
        view = figures_of(mine[list(PROB_COLUMNS)].to_numpy()) if len(mine) else {f: np.zeros(0) for f in FIGURES}
        row = {"batter": x, "bowler": y, "phase": p, "situations": len(mine)}
        row |= {f"model_{f}": float(v.mean()) if len(v) else np.nan for f, v in view.items()}
        row |= raw_record(met, keys[("batter", x)], keys[("bowler", y)], date, p)
        row["disagree"] = ", ".join(  # an interval needs two deliveries
            f
            for f in FIGURES
            if row["raw_deliveries"] > 1 and not row[f"raw_{f}_low"] <= row[f"model_{f}"] <= row[f"raw_{f}_high"]
        )
        rows.append(row)
    return pd.DataFrame(rows)


def pair_baseline(d: pd.DataFrame, scored: pd.DataFrame, strength: float) -> pd.DataFrame:
    """For each delivery of `scored` (match_id, innings, delivery_index of `d`), the pair's raw outcome counts
    before its day and the distribution they give shrunk by `strength` deliveries towards the mean of the
    batter's and the bowler's own distributions before the day (each with one delivery of the pool's mix):
    `pair_deliveries` and `pair_` PROB_COLUMNS."""
    regular = d[~d["is_super_over"].astype(bool)]
    onehot = np.eye(N_OUTCOMES)[outcome_codes(regular)]
    day = regular["date"].to_numpy().astype("datetime64[D]").astype(np.int64)
    frame = pd.DataFrame(onehot, columns=list(PROB_COLUMNS))
    frame["batter"], frame["bowler"], frame["day"] = entity_key(regular, "batter"), entity_key(regular, "bowler"), day
    pool = onehot.mean(axis=0)

    def before(by: list[str]) -> pd.DataFrame:
        """Each key's (by) outcome counts on days before each of its days: cumulative sums by day, shifted."""
        per_day = frame.groupby([*by, "day"], sort=True)[list(PROB_COLUMNS)].sum()
        return per_day.groupby(level=by).cumsum() - per_day

    where = lambda t: pd.MultiIndex.from_arrays(  # noqa: E731
        [t["match_id"].astype(str).to_numpy(), t["innings"].to_numpy(), t["delivery_index"].to_numpy()]
    )
    rows = pd.Series(np.arange(len(regular)), index=where(regular)).reindex(where(scored))
    if rows.isna().any():
        raise ValueError("pair_baseline: a scored delivery is not in the deliveries given")
    mine = frame.iloc[rows.to_numpy(int)]
    look = lambda table, by: table.reindex(pd.MultiIndex.from_frame(mine[[*by, "day"]])).to_numpy()  # noqa: E731
    pair = look(before(["batter", "bowler"]), ["batter", "bowler"])
    bat, bowl = look(before(["batter"]), ["batter"]), look(before(["bowler"]), ["bowler"])
    prior = 0.5 * ((bat + pool) / (bat.sum(1, keepdims=True) + 1) + (bowl + pool) / (bowl.sum(1, keepdims=True) + 1))
    p = (pair + strength * prior) / (pair.sum(1, keepdims=True) + strength)
    out = scored[["match_id", "innings", "delivery_index"]].copy()
    out["pair_deliveries"] = pair.sum(axis=1)
    for j, name in enumerate(PROB_COLUMNS):
        out[f"pair_{name}"] = p[:, j]
    return out


def evaluate_pairs(
    d: pd.DataFrame, scored: pd.DataFrame, choose: pd.DataFrame, strengths=STRENGTHS
) -> tuple[pd.DataFrame, float]:
    """Issue 55's matchup floor: the model's distribution (`scored`, PROB_COLUMNS of real deliveries) against
    `pair_baseline` on the deliveries of pairs that had met before, the strength chosen on `choose` (deliveries
    of an earlier season, its own pairs that had met): each delivery's `model_log_loss` and `pair_log_loss`,
    with its pair."""
    best = None
    for strength in strengths:
        base = pair_baseline(d, choose, strength)
        met = base["pair_deliveries"].to_numpy() > 0
        loss = _log_loss(base, "pair_", choose)[met].mean()
        if best is None or loss < best[0]:
            best = (loss, strength)
    strength = best[1]
    base = pair_baseline(d, scored, strength)
    met = base["pair_deliveries"].to_numpy() > 0
    out = scored.loc[met, ["match_id", "innings", "delivery_index", "batter", "bowler"]].copy()
    out["pair_deliveries"] = base.loc[met, "pair_deliveries"].to_numpy()
    out["model_log_loss"] = _log_loss(scored, "", scored)[met]
    out["pair_log_loss"] = _log_loss(base, "pair_", scored)[met]
    return out.reset_index(drop=True), strength


def _log_loss(probs: pd.DataFrame, prefix: str, outcomes: pd.DataFrame) -> np.ndarray:
    """Each delivery's -log p of its outcome, p from `probs`' columns `prefix` + PROB_COLUMNS."""
    p = probs[[f"{prefix}{c}" for c in PROB_COLUMNS]].to_numpy()
    return -np.log(np.clip(p[np.arange(len(p)), outcome_codes(outcomes)], 1e-12, None))


def plot_table(table: pd.DataFrame, path: Path, rows: str, title: str) -> Path:
    """Runs a delivery, the model's in colour, the raw record's beside it, one row per `rows` (per pair where
    the table holds several players on both sides), one column per phase."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    other = "batter" if rows == "bowler" else "bowler"
    if table[other].nunique() > 1:  # several on both sides: a row per pair
        table = table.assign(**{rows: table["batter"] + " v " + table["bowler"]})
    grid = table.pivot(index=rows, columns="phase", values="model_runs")
    grid = grid[[p for p in PHASES if p in grid.columns]]
    fig, ax = plt.subplots(figsize=(2.2 * len(grid.columns) + 2.5, 0.7 * len(grid) + 1.6))
    image = ax.imshow(grid.to_numpy(), cmap="RdYlGn_r", aspect="auto", vmin=0.8, vmax=2.0)
    by = table.set_index([rows, "phase"])
    for i, who in enumerate(grid.index):
        for j, phase in enumerate(grid.columns):
            r = by.loc[(who, phase)]
            raw = f"raw {r['raw_runs']:.2f} ({int(r['raw_deliveries'])})" if r["raw_deliveries"] else "never met"
            text = f"{r['model_runs']:.2f} / W {100 * r['model_wicket']:.1f}%\n{raw}" + ("  *" if r["disagree"] else "")
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set(xticks=range(len(grid.columns)), xticklabels=grid.columns, yticks=range(len(grid)), yticklabels=grid.index)
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, label="model: runs a delivery")
    return save_figure(fig, path)
