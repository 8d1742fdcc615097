"""What if, for a match in progress: the next over given to each bowler the fielding side may choose, or each
batter yet to bat sent in next; every choice simulated on the same random draws, so they are compared on
the same luck, with the chasing side's win probability, its Monte Carlo error and the projected total."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from cricket_attn.simulation.match import MatchContext, Point, StateError
from cricket_attn.simulation.rollout import Simulator
from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.setup import InningsSetup
from cricket_attn.simulation.state import InningsState


@dataclass
class ForcedOver(BowlerChoice):
    """The bowler rule, except that over `over` goes to `bowler` (a slot) in every simulation."""

    over: int = 0
    bowler: int = 0

    def probabilities(self, state: InningsState) -> torch.Tensor:
        p = super().probabilities(state)  # the caller has checked that he may bowl that over
        # Keep him free for it: not the over either side of it, and an over of his quota left before it.
        spare = (state.over < self.over) & (state.bowler_overs[:, self.bowler] >= self.quota - 1)
        keep_off = (state.over == self.over - 1) | (state.over == self.over + 1) | spare
        p[keep_off, self.bowler] = 0
        p = p / p.sum(1, keepdim=True)
        p[state.over == self.over] = torch.nn.functional.one_hot(torch.tensor(self.bowler), p.size(1)).to(p.dtype)
        return p


def next_over_bowler_choices(
    sim: Simulator, deliveries: pd.DataFrame, matches: pd.DataFrame | None = None, n: int = 100, seed: int = 0
) -> pd.DataFrame:
    """For a match in progress: the chasing side's win probability (and the batting side's projected total)
    under each player the fielding side may give the next over to, with the Monte Carlo standard error.
    Every choice is simulated with the same seed: they are compared on the same random draws."""
    ctx = MatchContext.of(deliveries, matches)
    number, point = _state_now(sim, ctx)
    state, setup = point.state, ctx.setups[number]
    rule = BowlerChoice.for_innings(state, sim.usage, ctx.date)
    eligible = state.bowler_overs[0] < rule.quota
    if len(ctx.innings[number]):  # the over under way (or just finished) is its bowler's: the choice is for the next
        next_over = int(state.over[0]) + 1
        eligible &= torch.arange(len(eligible)) != state.bowler[0]
    else:
        next_over = 0
    rows = []
    for slot in torch.nonzero(eligible)[:, 0].tolist():
        if slot >= len(setup.bowling):
            continue  # an unlisted player's place
        forced = ForcedOver(rule.weights, rule.quota, over=next_over, bowler=slot)
        rows.append(
            {
                "bowler": setup.bowling[slot],
                "overs_bowled": int(state.bowler_overs[0, slot]),
                "over": next_over + 1,
                **_what_if(sim, ctx, number, point, n, seed, forced),
            }
        )
    # Best first for the fielding side: the chasing side's lowest chance when it bats, its highest when it bowls.
    return pd.DataFrame(rows).sort_values("win_probability", ascending=number == 2, ignore_index=True)


def with_next_batter(setup: InningsSetup, innings: pd.DataFrame, player: str) -> InningsSetup:
    """The same innings with `player` the next to come in (now, if a wicket has just fallen; else at the next
    wicket): those who have batted keep their places and he goes before the rest of the order."""
    batted = _batted(setup, innings)
    if player not in setup.batting:
        raise StateError(f"batter {player!r} is not listed for the batting side")
    if player in batted:
        raise StateError(f"batter {player!r} has batted already (or opens the innings)")
    waiting = [p for p in setup.batting if p not in batted]
    return replace(
        setup, batting=[p for p in setup.batting if p in batted] + [player] + [p for p in waiting if p != player]
    )


def next_batter_choices(
    sim: Simulator, deliveries: pd.DataFrame, matches: pd.DataFrame | None = None, n: int = 100, seed: int = 0
) -> pd.DataFrame:
    """For a match in progress: the chasing side's win probability (and the batting side's projected total)
    with each player yet to bat as the next to come in, with the Monte Carlo standard error; `position` is
    his place among those waiting in the batting order (1: the one the order sends in). Same seed for each."""
    ctx = MatchContext.of(deliveries, matches)
    number = _innings_in_progress(ctx)
    inn, setup = ctx.innings[number], ctx.setups[number]
    batted = _batted(setup, inn)
    waiting = [p for p in setup.batting if p not in batted]
    if not waiting:
        raise StateError(f"match {ctx.match_id}: innings {number}: batting: no one is left to come in")
    rows = []
    for position, player in enumerate(waiting, 1):
        what_if = replace(ctx, setups={**ctx.setups, number: with_next_batter(setup, inn, player)})
        _, point = _state_now(sim, what_if)
        rows.append({"batter": player, "position": position, **_what_if(sim, what_if, number, point, n, seed)})
    # Best first for the batting side: the chasing side's highest chance when it bats, its lowest when it bowls.
    return pd.DataFrame(rows).sort_values("win_probability", ascending=number == 1, ignore_index=True)


def _innings_in_progress(ctx: MatchContext) -> int:
    number = ctx.live()
    if number is None:
        raise StateError(f"match {ctx.match_id}: the match is over; nothing to choose")
    return number


def _state_now(sim: Simulator, ctx: MatchContext) -> tuple[int, Point]:
    """The innings in progress and its state now."""
    number = _innings_in_progress(ctx)
    (point,) = ctx.points(sim, number, [len(ctx.innings[number])])
    return number, point


def _batted(setup: InningsSetup, innings: pd.DataFrame) -> set[str]:
    """Who has come to the crease in a real innings so far (before its first ball: the first two listed)."""
    if innings.empty:
        return set(setup.batting[:2])
    return {*innings["batter"].astype(str), *innings["non_striker"].astype(str)}


def _what_if(
    sim: Simulator, ctx: MatchContext, number: int, point: Point, n: int, seed: int, bowlers: BowlerChoice | None = None
) -> dict:
    """n simulations from one point: the chasing side's win probability, its standard error, the projected total."""
    end, wins = ctx.simulate(sim, number, [point], n, torch.Generator().manual_seed(seed), bowlers)
    return {
        "win_probability": float(wins.mean()),
        "win_probability_se": float(wins.std() / np.sqrt(n)) if n > 1 else float("nan"),
        "projected_total": float(end.runs.double().mean()),
    }


def choice_report(
    sim: Simulator, match: pd.DataFrame, matches: pd.DataFrame, question: str, n: int = 100, seed: int = 0
) -> str:
    """A "what if" of a match in progress as text ('' for a finished match): `question` "bowler" (who bowls
    the next over) or "batter" (who comes in next), `n` simulations of each choice from the same `seed`."""
    ctx = MatchContext.of(match, matches)
    number = ctx.live()
    if number is None:
        return ""
    inn = ctx.innings[number]
    score = f"{int(inn['runs_total'].sum())}/{int(inn['wicket_count'].sum())} after {int(inn['is_legal'].sum())} balls"
    if question == "bowler":
        table = next_over_bowler_choices(sim, match, matches, n=n, seed=seed)
        asked, note = f"who bowls over {table['over'].iloc[0]}?", ""
        table = table.drop(columns="over")
    else:
        table = next_batter_choices(sim, match, matches, n=n, seed=seed)
        asked, note = "who comes in next?", "; position: his place in the batting order, 1 the next as listed"
    head = (
        f"match {ctx.match_id}: {ctx.teams[number]} {score}; {asked} (win probability of {ctx.teams[2]}, "
        f"{n} simulations each, the same seed for every choice{note})"
    )
    return head + "\n" + table.to_string(index=False, float_format=lambda v: f"{v:.3f}")
