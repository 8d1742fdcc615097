"""The state of N simulations of one innings, one delivery at a time, in torch tensors.

`InningsState.inputs` gives the model, for the next ball, exactly the inputs the training pipeline gives it:
the match state comes from the same definitions (`features.ball_counts` and `features.state_matrix`), the
rest as `SequenceEncoder.encode` makes it; the tests replay real innings through `record` and compare every
ball. The laws that move the state (strike, the end of an over, who is out) are `cricket_attn.laws`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd
import torch

from cricket_attn.data.deliveries import PhaseRules
from cricket_attn.data.features import RECENT, RECENT_COLUMNS, ball_counts, state_matrix
from cricket_attn.data.sequences import UNK, SequenceEncoder
from cricket_attn.laws import (
    OUTCOME_INDEX,
    OUTCOMES,
    START_OF_INNINGS,
    bowler_wickets,
    dismissed,
    innings_over,
    over_complete,
    runs_ran,
    swaps_ends,
)
from cricket_attn.simulation.setup import InningsSetup

# Delivery's fields that are yes or no (the others are counts and classes).
FLAG_FIELDS = ("legal", "bowler_wicket", "striker_out", "non_striker_out", "striker_dismissed", "non_striker_dismissed")


@dataclass
class Delivery:
    """What one delivery did, as the scorebook records it: one value per simulation, (N,) tensors."""

    outcome: torch.Tensor  # the model's outcome class
    legal: torch.Tensor  # bool: not a wide or a no-ball
    runs_batter: torch.Tensor
    runs_wides: torch.Tensor  # the wide's one run included, as Cricsheet records it
    runs_noballs: torch.Tensor
    runs_other: torch.Tensor  # byes, leg-byes and penalty runs
    wickets: torch.Tensor  # team wickets (a retirement hurt is not one)
    bowler_wicket: torch.Tensor  # bool: credited to the bowler (laws.bowler_wickets)
    striker_out: torch.Tensor  # bool: the striker left (out or retired)
    non_striker_out: torch.Tensor  # bool
    striker_dismissed: torch.Tensor  # bool: the striker is out (left, and not retired hurt or retired not out)
    non_striker_dismissed: torch.Tensor  # bool
    ran: torch.Tensor  # runs physically run: an odd number swaps the batters (an all-run four is not a boundary)

    @property
    def runs_total(self) -> torch.Tensor:
        return self.runs_batter + self.runs_wides + self.runs_noballs + self.runs_other

    @classmethod
    def from_table(cls, d: pd.DataFrame) -> Delivery:
        """The deliveries of a deliveries table, one per row."""
        striker_out, non_striker_out = dismissed(d)
        striker_dismissed, non_striker_dismissed = dismissed(d, retirements=False)

        def t(values, dtype=torch.long) -> torch.Tensor:
            return torch.as_tensor(np.array(values), dtype=dtype)

        return cls(
            outcome=t(pd.Categorical(d["outcome"], categories=OUTCOMES).codes),
            legal=t(d["is_legal"], torch.bool),
            runs_batter=t(d["runs_batter"]),
            runs_wides=t(d["runs_wides"]),
            runs_noballs=t(d["runs_noballs"]),
            runs_other=t(d["runs_byes"] + d["runs_legbyes"] + d["runs_penalty"]),
            wickets=t(d["wicket_count"]),
            bowler_wicket=t(bowler_wickets(d), torch.bool),
            striker_out=t(striker_out, torch.bool),
            non_striker_out=t(non_striker_out, torch.bool),
            striker_dismissed=t(striker_dismissed, torch.bool),
            non_striker_dismissed=t(non_striker_dismissed, torch.bool),
            ran=t(runs_ran(d)),
        )

    def where(self, keep: torch.Tensor) -> Delivery:
        """This delivery where `keep`, elsewhere a null one (no ball, no run, no wicket: it moves nothing that
        the features or the result read, for simulations already over)."""
        return Delivery(
            **{f.name: torch.where(keep, x, torch.zeros_like(x)) for f in fields(self) for x in [getattr(self, f.name)]}
        )

    def __getitem__(self, i) -> Delivery:
        return Delivery(**{f.name: getattr(self, f.name)[i] for f in fields(self)})


class InningsState:
    """N simulations of one innings: each a score, the batters at the crease, the bowler, every player's
    figures so far, the partnership and the last six deliveries. Batters and bowlers are slots in the
    setup's lists; `inputs` turns the state into the model's inputs for the next ball."""

    def __init__(
        self,
        setup: InningsSetup,
        encoder: SequenceEncoder,
        phases: PhaseRules,
        n: int,
        target: torch.Tensor | float | None = None,
    ):
        self.setup, self.encoder, self.n = setup, encoder, n
        # Fixed for the innings: each slot's ids and rates, the venue's, and the phase of every (over, ball).
        bat, bowl = side_slots(setup.batting), side_slots(setup.bowling)
        # The sides are listed by name: as keys, they are the players of those names the encoder knows.
        bat_keys, bowl_keys = setup.player_keys(encoder, "batter", bat), setup.player_keys(encoder, "bowler", bowl)
        self.batter_ids = torch.as_tensor(encoder.batters.encode(pd.Series(bat_keys, dtype=object)))
        self.bowler_ids = torch.as_tensor(encoder.bowlers.encode(pd.Series(bowl_keys, dtype=object)))
        if encoder.records is not None and setup.date is None:
            raise ValueError("the model reads records, which are as of the match's date: the innings setup has no date")
        date = {"date": pd.Timestamp(setup.date)} if setup.date is not None else {}
        # What each slot's player and the match's venue and competition give the model, as in training
        # (`SequenceEncoder.key_features`: rates, or records as of the match's date).
        keyed = lambda column, frame: torch.as_tensor(
            encoder.key_features(column, pd.DataFrame(frame).assign(**date)), dtype=torch.float64
        )
        self.batter_rates = keyed("batter", {"batter": bat_keys})
        self.bowler_rates = keyed("bowler", {"bowler": bowl_keys})
        match = pd.DataFrame({"venue": [setup.venue], "city": [setup.city], "competition": [setup.competition]})
        # The match's own (the venue's, the competition's), the same for every ball, in the encoder's order.
        self.match_rates = {
            column: keyed(column, match)[0] for column in encoder.key_columns if column not in ("batter", "bowler")
        }
        self.venue_id = int(encoder.venues.encode(encoder.key(match, "venue"))[0])
        self.competition_id = int(encoder.competitions.encode(match["competition"])[0])
        self.team_type_id = int(encoder.team_types.encode(pd.Series([setup.team_type]))[0])
        self.mean = torch.as_tensor(encoder.mean, dtype=torch.float32)
        self.std = torch.as_tensor(encoder.std, dtype=torch.float32)
        self.phase_table = _phase_table(phases, setup)  # (overs, balls + 1)
        # A model reading players' histories: each slot's as of the match's date, (1, slots, K, fields) per
        # role, which the model encodes once per innings into its cache; each ball names its two players' slots.
        self.histories = slot_histories(encoder, setup) if encoder.history_balls else {}

        long = dict(dtype=torch.long)
        zeros = lambda *shape: torch.zeros(n, *shape, **long)
        self.target = torch.as_tensor(0.0 if target is None else target, dtype=torch.float64).expand(n).clone()
        self.runs, self.wickets, self.legal, self.deliveries = zeros(), zeros(), zeros(), zeros()
        self.over, self.legal_in_over = zeros(), zeros()
        self.striker, self.non_striker, self.bowler = zeros(), torch.ones(n, **long), zeros()
        self.prev_outcome = torch.full((n,), START_OF_INNINGS, **long)
        self.batter_runs, self.batter_faced = zeros(len(bat)), zeros(len(bat))
        self.batter_fours, self.batter_sixes = zeros(len(bat)), zeros(len(bat))  # each player's line, not inputs
        self.batted = torch.zeros(n, len(bat), dtype=torch.bool)  # came to the crease
        self.out = torch.zeros(n, len(bat), dtype=torch.bool)  # out (a retirement hurt or not out is not)
        self.batted[:, :2] = True
        self.bowler_balls, self.bowler_runs, self.bowler_wickets = zeros(len(bowl)), zeros(len(bowl)), zeros(len(bowl))
        self.bowler_overs = zeros(len(bowl))  # overs started: the quota counts these
        self.over_bowler = torch.full((n, setup.balls // setup.balls_per_over + 4), -1, **long)  # who bowled each over
        self.last_bowler = torch.full((n,), -1, **long)  # who bowled the previous over
        self.partnership_runs, self.partnership_balls = zeros(), zeros()
        self.recent = zeros(RECENT, len(RECENT_COLUMNS))  # the last six deliveries, summed up as RECENT_COLUMNS
        self.fours, self.sixes = zeros(), zeros()  # the innings' boundaries (for checking simulations, not an input)

    # --- what the model reads ---

    def numeric(self, with_rates: bool = True) -> torch.Tensor:
        """(N, F) standardised numeric features, in the encoder's order: STATE_COLUMNS (`state_matrix`, as in
        training), then the striker's, the bowler's and the venue's rates (without them, (N, len(STATE_COLUMNS)))."""
        rows = torch.arange(self.n)
        recent = self.recent.sum(1)  # (N, 5)
        counted = {
            "runs_before": self.runs,
            "wickets_before": self.wickets,
            "legal_balls_before": self.legal,
            "batter_runs_before": self.batter_runs[rows, self.striker],
            "batter_balls_before": self.batter_faced[rows, self.striker],
            "bowler_balls_before": self.bowler_balls[rows, self.bowler],
            "bowler_runs_before": self.bowler_runs[rows, self.bowler],
            "bowler_wickets_before": self.bowler_wickets[rows, self.bowler],
            "partnership_runs": self.partnership_runs,
            "partnership_balls": self.partnership_balls,
            "after_noball": self.prev_outcome == OUTCOME_INDEX["noball"],
            **{name: recent[:, i] for i, name in enumerate(RECENT_COLUMNS)},
            "ball_in_over": self.legal_in_over + 1,
        }
        setup = self.setup
        columns = state_matrix(
            counted, setup.balls, setup.balls_per_over, self.target, setup.season, self.encoder.last_season
        )
        if not with_rates:
            k = columns.size(1)
            return (columns.float() - self.mean[:k]) / self.std[:k]
        x = torch.cat(
            [
                columns,
                self.batter_rates[self.striker],
                self.bowler_rates[self.bowler],
                *(part.expand(self.n, -1) for part in self.match_rates.values()),
            ],
            dim=1,
        ).float()
        return (x - self.mean) / self.std

    def rates(self) -> list[tuple[int, torch.Tensor]]:
        """Every batting slot's, every bowling slot's and the match's own rates (the venue's, the
        competition's), standardised as `numeric` does, each with the place of its first feature among the
        numeric features: (batting slots, k), (bowling slots, k), then (k,) each."""
        out = []
        parts = {"batter": self.batter_rates, "bowler": self.bowler_rates, **self.match_rates}
        for column, part in parts.items():
            start = self.encoder.block_start(column)
            at = slice(start, start + part.size(-1))
            out.append((start, (part.float() - self.mean[at]) / self.std[at]))
        return out

    def inputs(self, rates_by_slot: bool = False) -> dict[str, torch.Tensor]:
        """The model's inputs for the next ball of every simulation, as (N, 1) tensors (`numeric` (N, 1, F)).
        With `rates_by_slot`, `numeric` holds the match state alone, and `rate_slots` (N, 1, 2), the striker's
        and the bowler's slots, say whose rates to take from the tables the model keeps in its cache
        (`SimulationCache.keep_rates`)."""
        n, rows = self.n, torch.arange(self.n)
        full = lambda v: torch.full((n,), v, dtype=torch.long)
        batch = {
            "prev_outcome": self.prev_outcome,
            "innings_marker": full(int(self.setup.chase)),
            "batter": self.batter_ids[self.striker],
            "bowler": self.bowler_ids[self.bowler],
            "venue": full(self.venue_id),
            "competition": full(self.competition_id),
            "team_type": full(self.team_type_id),
            "legal_ball_index": self.legal,
            "ball_in_over": self.legal_in_over + 1,
            "over": self.over,
            "phase": self.phase_table[
                self.over.clamp(max=self.phase_table.size(0) - 1), self.legal.clamp(max=self.phase_table.size(1) - 1)
            ],
            "batter_balls": self.batter_faced[rows, self.striker],
            "bowler_balls": self.bowler_balls[rows, self.bowler],
        }
        if rates_by_slot:
            batch["rate_slots"] = torch.stack([self.striker, self.bowler], dim=1)
        if self.histories:
            batch["batter_slot"], batch["bowler_slot"] = self.striker, self.bowler
        batch = {k: v[:, None] for k, v in batch.items()}
        batch["numeric"] = self.numeric(with_rates=not rates_by_slot)[:, None]
        return {**batch, **self.histories}  # the histories: one row, every simulation's

    # --- how the state moves ---

    def record(self, ball: Delivery) -> None:
        """Score one delivery of every simulation: the figures, the partnership, the last six, the batters
        (an odd number of runs run swaps them; a dismissed batter's place goes to the next in the order)."""
        rows = torch.arange(self.n)
        total, legal = ball.runs_total, ball.legal.long()
        adds = ball_counts(
            ball.outcome, total, ball.runs_batter, ball.runs_wides, ball.runs_noballs, ball.bowler_wicket
        )
        self.runs += total
        self.wickets += ball.wickets
        self.batter_runs[rows, self.striker] += ball.runs_batter
        self.batter_faced[rows, self.striker] += adds["faced"].long()
        # Boundaries, off a no-ball too, as scored; four runs all run are not a four.
        self.batter_fours[rows, self.striker] += ((ball.runs_batter == 4) & (ball.ran < 4)).long()
        self.batter_sixes[rows, self.striker] += ((ball.runs_batter == 6) & (ball.ran < 6)).long()
        self.bowler_balls[rows, self.bowler] += legal
        self.bowler_runs[rows, self.bowler] += adds["conceded"]
        self.bowler_wickets[rows, self.bowler] += adds["bowler_wickets"].long()
        fell = ball.wickets > 0
        self.partnership_runs = torch.where(fell, 0, self.partnership_runs + total)
        self.partnership_balls = torch.where(fell, 0, self.partnership_balls + legal)
        summary = torch.stack(
            [total, adds["dots"].long(), adds["boundaries"].long(), ball.wickets, adds["extras"].long()], dim=1
        )  # RECENT_COLUMNS
        self.recent = torch.cat([self.recent[:, 1:], summary[:, None]], dim=1)
        self.prev_outcome = ball.outcome.clone()
        self.fours += (ball.outcome == OUTCOME_INDEX["4"]).long()
        self.sixes += (ball.outcome == OUTCOME_INDEX["6"]).long()
        self.legal += legal
        self.legal_in_over += legal
        self.deliveries += 1
        # The batters: ends change on an odd number run; the dismissed make way for the next in the order.
        swap = swaps_ends(ball.ran)
        self.striker, self.non_striker = (
            torch.where(swap, self.non_striker, self.striker),
            torch.where(swap, self.striker, self.non_striker),
        )
        striker_out = torch.where(swap, ball.non_striker_out, ball.striker_out)
        non_striker_out = torch.where(swap, ball.striker_out, ball.non_striker_out)
        self.out[rows, self.striker] |= torch.where(swap, ball.non_striker_dismissed, ball.striker_dismissed)
        self.out[rows, self.non_striker] |= torch.where(swap, ball.striker_dismissed, ball.non_striker_dismissed)
        # The next in the order comes in, unless that ball ended the innings (he never reached the crease).
        going_on = ~self.finished()
        self.striker = torch.where(striker_out, self.next_batter(), self.striker)
        self.batted[rows, self.striker] |= going_on
        self.non_striker = torch.where(non_striker_out, self.next_batter(), self.non_striker)
        self.batted[rows, self.non_striker] |= going_on

    def next_batter(self) -> torch.Tensor:
        """(N,) the first slot in batting order not yet at the crease (the last slot once all have batted)."""
        waiting = ~self.batted
        first = waiting.long().argmax(1)
        return torch.where(waiting.any(1), first, waiting.size(1) - 1)

    def over_complete(self) -> torch.Tensor:
        """(N,) bool: the over has had its legal balls (`laws.over_complete`)."""
        return over_complete(self.legal_in_over, self.setup.balls_per_over)

    def end_over(self, which: torch.Tensor | None = None) -> None:
        """The over is done for the simulations `which` (default all): the batters change ends."""
        which = torch.ones(self.n, dtype=torch.bool) if which is None else which
        self.last_bowler = torch.where(which, self.bowler, self.last_bowler)
        self.over = self.over + which.long()
        self.legal_in_over = torch.where(which, 0, self.legal_in_over)
        self.striker, self.non_striker = (
            torch.where(which, self.non_striker, self.striker),
            torch.where(which, self.striker, self.non_striker),
        )

    def start_over(self, bowler: torch.Tensor, which: torch.Tensor | None = None) -> None:
        """`bowler` (N,) slots take the new over in the simulations `which` (default all)."""
        which = torch.ones(self.n, dtype=torch.bool) if which is None else which
        self.bowler = torch.where(which, bowler, self.bowler)
        rows = torch.arange(self.n)[which]
        self.bowler_overs[rows, self.bowler[which]] += 1
        self.over_bowler[rows, self.over[which].clamp(max=self.over_bowler.size(1) - 1)] = self.bowler[which]

    def put_batters(self, striker: torch.Tensor, non_striker: torch.Tensor) -> None:
        """Set who is at the crease (slots), as a real innings' record says."""
        self.striker, self.non_striker = striker, non_striker
        rows = torch.arange(self.n)
        self.batted[rows, striker] = True
        self.batted[rows, non_striker] = True

    def finished(self) -> torch.Tensor:
        """(N,) bool: all out, out of balls, or the target reached (`laws.innings_over`; no target: 0)."""
        target = torch.where(self.target > 0, self.target, torch.inf)
        return innings_over(self.runs, self.wickets, self.legal, self.setup.balls, target)

    # --- copies ---

    def clone(self) -> InningsState:
        return self._map(torch.clone, self.n)

    @staticmethod
    def stack(states: list[InningsState]) -> InningsState:
        """The simulations of several states of the same innings, one after the other."""
        if any(s.setup is not states[0].setup for s in states):
            raise ValueError("stack takes states of one innings (the same setup)")
        out = states[0]._map(lambda t: t, sum(s.n for s in states))
        for name in _PER_SIMULATION:
            setattr(out, name, torch.cat([getattr(s, name) for s in states]))
        return out

    def take(self, index: torch.Tensor) -> InningsState:
        """These simulations, in this order (an index may repeat one)."""
        return self._map(lambda t: t[index], len(index))

    def _map(self, fn, n: int) -> InningsState:
        out = object.__new__(InningsState)
        out.__dict__.update(self.__dict__)
        for name in _PER_SIMULATION:
            setattr(out, name, fn(getattr(self, name)))
        out.n = n
        return out


_PER_SIMULATION = (
    "target", "runs", "wickets", "legal", "deliveries", "over", "legal_in_over", "striker", "non_striker", "bowler",
    "prev_outcome", "batter_runs", "batter_faced", "batter_fours", "batter_sixes", "batted", "out", "bowler_balls",
    "bowler_runs", "bowler_wickets", "bowler_overs", "over_bowler", "last_bowler", "partnership_runs",
    "partnership_balls", "recent", "fours", "sixes",
)  # fmt: skip


def side_slots(players: list[str], size: int = 11) -> list[str]:
    """A side of at least `size` slots: unlisted players are the unknown player (UNK, an empty name)."""
    return [*players, *[UNK] * max(size - len(players), 0)]


def slot_histories(encoder: SequenceEncoder, setup: InningsSetup) -> dict[str, torch.Tensor]:
    """`batter_history` and `bowler_history`, (1, slots, K, fields): the players' histories of each slot of
    the batting and the bowling side (the unknown fills: none) as of the match's date
    (`PlayerHistories.of`)."""
    if setup.date is None:
        raise ValueError(
            "the model reads players' histories, which are as of the match's date: the innings setup has no date"
        )
    histories = encoder.attached_histories()
    return {
        f"{role}_history": torch.as_tensor(histories.of(role, side_slots(side), setup.date, setup.ids))[None]
        for role, side in (("batter", setup.batting), ("bowler", setup.bowling))
    }


def _phase_table(phases: PhaseRules, setup: InningsSetup) -> torch.Tensor:
    """(overs, legal balls and two overs more): the phase code of a ball in each over at each legal-ball index."""
    overs = setup.balls // setup.balls_per_over + 4  # room for long overs and reduced chases
    over, ball = np.meshgrid(np.arange(overs), np.arange(setup.balls + 2 * setup.balls_per_over), indexing="ij")
    codes = phases.assign(
        pd.Series([setup.match_type] * over.size),
        pd.Series([setup.balls_per_over] * over.size),
        over.ravel(),
        ball.ravel(),
        np.zeros(over.size, dtype=bool),
        pd.Series([setup.powerplays] * over.size),
    ).codes
    return torch.as_tensor(np.asarray(codes, dtype=np.int64).reshape(over.shape))


def replay(state: InningsState, d: pd.DataFrame, before_ball=None) -> InningsState:
    """Move a one-simulation state through the real deliveries `d` (one innings, in order), taking who bats
    and bowls and the over from the record. `before_ball(i, state, by_laws)` is called before delivery i is
    recorded, with the (striker, non-striker) slots the laws gave before the record's were put."""
    if state.n != 1:
        raise ValueError(f"replay moves a state of one simulation (then `take` copies of it), this one has {state.n}")
    if d.empty:  # an innings not yet begun: the state before its first ball
        return state
    batting = {p: i for i, p in enumerate(state.setup.batting)}
    bowling = {p: i for i, p in enumerate(state.setup.bowling)}
    if int(state.deliveries[0]) == 0:
        state.batted[:] = False  # the record names the openers, who need not be the first two listed
    balls = Delivery.from_table(d)
    overs = d["over"].to_numpy()
    batters = [torch.full((state.n,), batting[str(p)]) for p in d["batter"].astype(str)]
    others = [torch.full((state.n,), batting[str(p)]) for p in d["non_striker"].astype(str)]
    bowlers = [torch.full((state.n,), bowling[str(p)]) for p in d["bowler"].astype(str)]
    for i in range(len(d)):
        new_over = i == 0 or overs[i] != overs[i - 1]
        if new_over and i > 0:
            state.end_over()
        state.over[:] = int(overs[i])
        by_laws = (state.striker.clone(), state.non_striker.clone())
        state.put_batters(batters[i], others[i])
        if new_over or bool((bowlers[i] != state.bowler).any()):  # a new over, or a bowler taken off mid-over
            state.start_over(bowlers[i])
        if before_ball is not None:
            before_ball(i, state, by_laws)
        state.record(balls[i : i + 1])
    return state
