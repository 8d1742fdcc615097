"""Before any win probability: do simulated innings look like the real ones, and where they do not, why?

Per-ball errors compound over 120 balls and the scoring level drifts season by season, so each real
innings is simulated from its first ball (the chase with its real target) and the simulated innings are
compared with the real ones, season by season: mean and spread of the total, wickets, fours and sixes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import torch

from cricket_attn import progress
from cricket_attn.inference.probabilities import score_deliveries
from cricket_attn.inference.recent import with_offsets
from cricket_attn.metrics import PROB_COLUMNS
from cricket_attn.simulation.match import innings_points, over_starts, simulate_points
from cricket_attn.simulation.rollout import Simulator, roll_in_chunks
from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.scorebook import class_values
from cricket_attn.simulation.setup import InningsSetup
from cricket_attn.simulation.state import InningsState

MEASURES = ("runs", "wickets", "fours", "sixes")


def simulate_from_the_start(
    sim: Simulator,
    deliveries: pd.DataFrame,
    matches: pd.DataFrame | None,
    n: int,
    seed: int = 0,
    levels: dict[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """One row per regular innings of `deliveries`: its real MEASURES and the mean and standard deviation of
    n simulations of it from ball 0 (same batting order, bowlers by the rule, the chase's real target). With
    `levels` (cricket_attn.inference.recent), each match's simulations take its class offsets, as the
    evaluation's do."""
    generator = torch.Generator().manual_seed(seed)
    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    groups = list(d.groupby(["match_id", "innings"], sort=False, observed=True))
    rows = []
    for (match_id, innings), inn in progress.track(groups, "simulating innings", unit="innings"):
        setup = InningsSetup.from_table(inn, matches)
        first = inn.iloc[0]
        target = float(first["target_runs"]) if pd.notna(first["target_runs"]) else None
        state = sim.start(setup, n, target)
        bowlers = BowlerChoice.for_innings(state, sim.usage, first["date"])
        # MAX_ROWS simulations at a time (one roll, draw for draw, up to it): a chunk's KV cache, not n's.
        end = roll_in_chunks(
            sim.for_match(levels, match_id), state, torch.arange(n), lambda chunk: sim.new_caches(), bowlers, generator
        )
        real = {
            "runs": inn["runs_total"].sum(),
            "wickets": inn["wicket_count"].sum(),
            "fours": (inn["outcome"] == "4").sum(),
            "sixes": (inn["outcome"] == "6").sum(),
        }
        row = {
            "match_id": str(match_id),
            "innings": int(innings),
            "season": int(first["season"]),
            "chase": setup.chase,
            "cut_short": end.cut_short,
        }
        for m in MEASURES:
            values = getattr(end, m).double()
            row[f"real_{m}"] = float(real[m])
            row[f"sim_{m}"] = float(values.mean())
            row[f"sim_{m}_sd"] = float(values.std())
        rows.append(row)
    return pd.DataFrame(rows)


def season_table(per_innings: pd.DataFrame) -> pd.DataFrame:
    """Per season and innings (first, chase): real and simulated means of each measure, and the spread of
    the real values against the spread of the simulations (the root mean simulated variance)."""
    out = []
    for (season, chase), part in per_innings.groupby(["season", "chase"]):
        row = {"season": season, "innings": "chase" if chase else "first", "n": len(part)}
        for m in MEASURES:
            row[f"real_{m}"] = part[f"real_{m}"].mean()
            row[f"sim_{m}"] = part[f"sim_{m}"].mean()
            row[f"real_{m}_sd"] = part[f"real_{m}"].std()
            # The spread a simulated innings has around the real innings' mean: within-innings variance
            # plus the variance of the simulated means across innings.
            row[f"sim_{m}_sd"] = float(np.sqrt((part[f"sim_{m}_sd"] ** 2).mean() + part[f"sim_{m}"].var()))
        out.append(row)
    return pd.DataFrame(out)


# --- Why simulated innings differ from real ones: each cause measured on its own ---


def extras_values(train: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
    """Each class's run value in the training seasons (the scorebook's) against the test seasons'."""
    a, b = class_values(train), class_values(test)
    return pd.DataFrame(
        {
            "outcome": a.index,
            "train_runs": a["runs"].to_numpy(),
            "test_runs": b["runs"].to_numpy(),
            "test_share": (b["deliveries"] / b["deliveries"].sum()).to_numpy(),
        }
    )


def per_ball_levels(
    sim: Simulator, deliveries: pd.DataFrame, train: pd.DataFrame, levels: dict[str, np.ndarray] | None = None
) -> pd.DataFrame:
    """Per season and innings (first, chase): runs and wickets per delivery, real against the model's
    expectation for the same deliveries, each predicted from the real balls before it and valued by the
    training seasons' class values. A per-ball gap compounds over a simulated innings; `per_innings` is it
    times the mean deliveries of an innings. With `levels` (cricket_attn.inference.recent), the matches it has take
    their class offsets, and with the simulator's players' form each ball its players' tilt, as the simulations do."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    scored = score_deliveries(sim.model, sim.encoder, d)
    if len(scored) != len(d):
        raise ValueError(f"{len(d) - len(scored)} deliveries were not scored (longer than the model's sequences)")
    if levels:
        scored = with_offsets(scored, levels)
    if sim.form is not None:
        scored = sim.form.tilt(scored, d.groupby(d["match_id"].astype(str))["date"].first())
    values = class_values(train)
    probs = scored[list(PROB_COLUMNS)].to_numpy()
    frame = pd.DataFrame(
        {
            "season": d["season"].to_numpy(),
            "chase": d["target_runs"].notna().to_numpy(),
            "innings_id": d["match_id"].astype(str) + "/" + d["innings"].astype(str),
            "real_runs": d["runs_total"].to_numpy(float),
            "model_runs": probs @ values["runs"].to_numpy(),
            "real_wickets": d["wicket_count"].to_numpy(float),
            "model_wickets": probs @ values["wickets"].to_numpy(),
        }
    )
    out = (
        frame.groupby(["season", "chase"])
        .agg(
            innings=("innings_id", "nunique"),
            deliveries=("real_runs", "size"),
            real_runs=("real_runs", "mean"),
            model_runs=("model_runs", "mean"),
            real_wickets=("real_wickets", "mean"),
            model_wickets=("model_wickets", "mean"),
        )
        .reset_index()
    )
    per_innings = out["deliveries"] / out["innings"]
    out["runs_gap_per_innings"] = (out["model_runs"] - out["real_runs"]) * per_innings
    out["wickets_gap_per_innings"] = (out["model_wickets"] - out["real_wickets"]) * per_innings
    out.insert(1, "innings_kind", np.where(out.pop("chase"), "chase", "first"))
    return out


def bowler_rule_fit(sim: Simulator, deliveries: pd.DataFrame, matches: pd.DataFrame | None) -> pd.DataFrame:
    """Per season: how well the bowler rule names the real bowler of each over after the first, given the real
    innings so far. The mean log-likelihood of the real bowler per over, against drawing evenly among the
    players who may bowl it; how often the rule's likeliest choice bowled it; overs whose bowler the rule
    ruled out (a quota or a second over running in the record)."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    rows = []
    for _, inn in d.groupby(["match_id", "innings"], sort=False, observed=True):
        inn = inn.reset_index(drop=True)
        setup = InningsSetup.from_table(inn, matches)
        first = inn.iloc[0]
        target = float(first["target_runs"]) if pd.notna(first["target_runs"]) else None
        starts = over_starts(inn)[1:]
        if not starts:
            continue
        state = InningsState.stack([p.state for p in innings_points(sim, setup, inn, starts, target)])
        rule = BowlerChoice.for_innings(state, sim.usage, first["date"])
        real = state.bowler.clone()  # the state at an over's first ball has its bowler on: take him off
        state.bowler_overs[torch.arange(state.n), real] -= 1
        eligible = state.bowler_overs < rule.quota  # from the second over on there is always a last bowler
        eligible[torch.arange(state.n), state.last_bowler] = False
        eligible[:, len(setup.bowling) :] = False
        p = rule.probabilities(state)
        took = p[torch.arange(state.n), real]
        rows.append(
            pd.DataFrame(
                {
                    "season": int(first["season"]),
                    "ruled_out": (took == 0).numpy(),
                    "log_lik": torch.log(took.clamp(min=1e-12)).numpy(),
                    "even_log_lik": -torch.log(eligible.sum(1).clamp(min=1).double()).numpy(),
                    "likeliest": (p.argmax(1) == real).numpy(),
                }
            )
        )
    frame = pd.concat(rows, ignore_index=True)
    kept = frame[~frame["ruled_out"]]
    out = kept.groupby("season").agg(
        overs=("log_lik", "size"),
        rule_log_lik=("log_lik", "mean"),
        even_log_lik=("even_log_lik", "mean"),
        likeliest_bowled=("likeliest", "mean"),
    )
    out["ruled_out"] = frame.groupby("season")["ruled_out"].sum()
    return out.reset_index()


# Who plays: the rules for the next bowler and batter against the real ones, from the same states.
WAYS = {"rules": (False, False), "real_bowlers": (True, False), "real_order": (False, True), "both_real": (True, True)}


def real_order(setup: InningsSetup, innings: pd.DataFrame) -> InningsSetup:
    """`setup` with the batting order the real innings had: who came to the crease, in order, then the rest."""
    came = pd.unique(np.column_stack([innings["batter"].astype(str), innings["non_striker"].astype(str)]).ravel())
    return replace(setup, batting=[*came, *(p for p in setup.batting if p not in came)])


def real_bowlers(rule: BowlerChoice, setup: InningsSetup, innings: pd.DataFrame) -> BowlerChoice:
    """The bowler rule, except that every over the real innings reached goes to its real bowler (whoever may
    bowl it by the laws in the simulation: should he not, the rule chooses among the others)."""
    weights = rule.weights.clone()
    for over, bowler in innings.drop_duplicates("over")[["over", "bowler"]].itertuples(index=False):
        if over < len(weights):
            weights[over] *= 1e-6
            weights[over, setup.bowling.index(str(bowler))] = 1.0
    return BowlerChoice(weights, rule.quota)


def who_plays(
    sim: Simulator,
    deliveries: pd.DataFrame,
    matches: pd.DataFrame | None,
    overs=(6, 10, 15),
    n: int = 50,
    seed: int = 0,
    levels: dict[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Per first innings of `deliveries` and point (the start of each of `overs`, 0-based): the real total and
    the mean of n simulations to the end of the innings each of the WAYS: the rules for who bowls and who
    comes in, the real bowler of every over the real innings reached, the real batting order, both. Every way
    takes the same random draws; with `levels`, each match its class offsets, as in the evaluation."""
    d = deliveries[~deliveries["is_super_over"].astype(bool) & (deliveries["innings"] == 1)]
    groups = list(d.groupby("match_id", sort=False, observed=True))
    rows = []
    for match_id, inn in progress.track(groups, "who plays", unit="innings"):
        inn = inn.reset_index(drop=True)
        starts = over_starts(inn)
        chosen = [(k, starts[k]) for k in overs if k < len(starts)]
        if not chosen:
            continue
        setup, first = InningsSetup.from_table(inn, matches), inn.iloc[0]
        date = first["date"]
        match_sim = sim.for_match(levels, match_id)
        found, replayed = {}, {}
        for way, (bowlers_real, order_real) in WAYS.items():
            if order_real not in replayed:  # the real innings replayed once per batting order
                mine = real_order(setup, inn) if order_real else setup
                replayed[order_real] = mine, innings_points(match_sim, mine, inn, [i for _, i in chosen], None)
            mine, points = replayed[order_real]
            rule = BowlerChoice.for_innings(points[0].state, sim.usage, date)
            bowlers = real_bowlers(rule, mine, inn) if bowlers_real else rule
            end = simulate_points(match_sim, points, inn, date, n, torch.Generator().manual_seed(seed), bowlers)
            found[way] = end.runs.double().view(len(points), n).mean(1)
        total = float(inn["runs_total"].sum())
        for j, (k, _) in enumerate(chosen):
            rows.append(
                {
                    "match_id": str(match_id),
                    "season": int(first["season"]),
                    "after_overs": k,
                    "total": total,
                    **{way: float(found[way][j]) for way in WAYS},
                }
            )
    return pd.DataFrame(rows)


def who_plays_table(per_point: pd.DataFrame) -> pd.DataFrame:
    """Per season and point: innings, and each way's bias (projected - real) and mean absolute error."""
    errors = per_point[list(WAYS)].sub(per_point["total"], axis=0)
    grouped = errors.groupby([per_point["season"], per_point["after_overs"]])
    out = pd.concat(
        [
            grouped.size().rename("innings"),
            grouped.mean().add_suffix("_bias"),
            grouped.agg(lambda e: e.abs().mean()).add_suffix("_mae"),
        ],
        axis=1,
    )
    return out.reset_index()


def causes(
    sim: Simulator,
    d: pd.DataFrame,
    matches: pd.DataFrame,
    train_until: int,
    test: list[int],
    seed: int = 0,
    check_sims: int = 0,
    who_sims: int = 0,
    test_only: bool = False,
    levels=None,
) -> dict[str, tuple[str, pd.DataFrame]]:
    """Where the simulator can go wrong, each measured on its own, on the last training season and the test
    seasons (`test_only`: the test seasons alone): name -> (title, table). `check_sims` simulations of each
    innings from its first ball and `who_sims` from each state of the who-plays check (0: not run)."""
    train = d[d["season"].between(sim.encoder.first_season, train_until)]
    shown = d[d["season"].isin([train_until, *test])]
    if test_only:
        shown = shown[shown["season"].isin(test)]
    why = {
        "levels": (
            "Per delivery, real against the model (each ball predicted from the real balls before it, valued "
            "by the training seasons' class values; gap per innings: model minus real, times an innings' "
            "deliveries):",
            per_ball_levels(sim, shown, train, levels),
        ),
        "extras": (
            "Run value of each outcome class, training seasons (the scorebook) against the test seasons:",
            extras_values(train, d[d["season"].isin(test)]),
        ),
        "bowlers": (
            "The bowler rule against the real bowler of each over after the first (log-likelihood per over; "
            "even: drawing evenly among those who may bowl it):",
            bowler_rule_fit(sim, shown, matches),
        ),
    }
    if check_sims:
        per_innings = simulate_from_the_start(sim, shown, matches, check_sims, seed, levels)
        why["from_the_start"] = (
            f"Simulated against real innings from ball 0 ({check_sims} simulations of "
            "each, the chase with its real target):",
            season_table(per_innings),
        )
    if who_sims:
        per_point = who_plays(sim, shown, matches, n=who_sims, seed=seed, levels=levels)
        why["who_plays"] = (
            f"Who plays: the first-innings projection (bias: projected minus real; MAE) with the rules "
            f"for the next bowler and batter, the real bowler of every over the real innings reached, the "
            f"real batting order, and both ({who_sims} simulations from each state, the same draws "
            "for each):",
            who_plays_table(per_point),
        )
    return why
