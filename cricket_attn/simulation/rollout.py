"""Monte Carlo innings and matches: the ball model rolled forward with its KV cache.

Each step feeds every unfinished simulation's next ball into the cache (one cache per ensemble member),
samples its outcome from the model's distribution and its scorebook entry from the training seasons, and
moves the state. A real innings' balls so far are encoded once and shared by all simulations from them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch

from cricket_attn.data.deliveries import PhaseRules
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.form import PlayerForm
from cricket_attn.inference.kv_cache import SimulationCache
from cricket_attn.laws import OUTCOMES
from cricket_attn.model import CricketTransformer, Ensemble
from cricket_attn.simulation.rules import BowlerChoice, BowlingUsage
from cricket_attn.simulation.scorebook import Scorebook
from cricket_attn.simulation.setup import InningsSetup
from cricket_attn.simulation.state import InningsState, slot_histories

# The innings-level spread the commands use (`Simulator.spread`), chosen on 2024 with the protocol a season
# back (docs/log/2026-11-23.md).
SPREAD = 0.1
# The largest spread a command takes: z of one standard deviation already tilts a ball's distribution by
# its whole spread of runs (larger ones are clipped at zero more than they are drawn).
MAX_SPREAD = 1.0


@dataclass
class InningsEnd:
    """How each simulation's innings ended, (N,) tensors."""

    runs: torch.Tensor
    wickets: torch.Tensor
    legal: torch.Tensor  # legal balls bowled
    deliveries: torch.Tensor
    fours: torch.Tensor
    sixes: torch.Tensor
    cut_short: int = 0  # simulations stopped at the model's longest sequence (never seen in real T20 innings)
    final: InningsState | None = None  # each simulation's state at its end, where kept (every player's figures)
    then: InningsEnd | None = None  # from a first innings: how the chase after each simulation ended

    @staticmethod
    def cat(ends: list[InningsEnd]) -> InningsEnd:
        """The ends of several batches of simulations of one innings, one after the other."""
        if len(ends) == 1:
            return ends[0]
        fields = ("runs", "wickets", "legal", "deliveries", "fours", "sixes")
        joined = {name: torch.cat([getattr(e, name) for e in ends]) for name in fields}
        final = InningsState.stack([e.final for e in ends]) if all(e.final is not None for e in ends) else None
        return InningsEnd(**joined, cut_short=sum(e.cut_short for e in ends), final=final)


@dataclass
class Simulator:
    """A trained model with what simulating needs besides: the phase rules, the scorebook of the training
    seasons, and the sides' earlier overs for the bowler rule."""

    model: CricketTransformer | Ensemble
    encoder: SequenceEncoder
    phases: PhaseRules
    scorebook: Scorebook
    usage: BowlingUsage | None = None
    # Class offsets added to the model's log-probabilities (cricket_attn.inference.recent: the league's level since
    # the training seasons, for the match being simulated); None: the model as it is.
    offsets: torch.Tensor | None = None
    # Innings-level spread: each simulated innings draws z ~ N(0, spread^2) once and tilts every ball's
    # distribution towards the classes worth more runs (z > 0) or fewer (`tilt`), so some innings run hot and
    # some cold (the pitch, the conditions) beyond what each ball's distribution holds, with the same
    # distribution on average over z; 0: none.
    spread: float = 0.0
    # Players' form since the training seasons (cricket_attn.inference.form): each ball's distribution tilted by its
    # batter's and bowler's form before the match's date; None: the model as it is.
    form: PlayerForm | None = None

    def __post_init__(self):
        if self.encoder.first_innings:
            raise ValueError(
                "this model reads the first innings as context; the simulator's state does not give "
                "it that context yet (simulate with a model trained without it)"
            )
        if not self.encoder.known_attached:
            raise ValueError(
                "this model reads players' histories or records: attach them to its encoder "
                "(`attach_known`, or `Simulator.build`)"
            )

    @classmethod
    def build(
        cls,
        model: CricketTransformer | Ensemble,
        encoder: SequenceEncoder,
        phases: PhaseRules,
        known: pd.DataFrame,
        spread: float = SPREAD,
        form: PlayerForm | None = None,
    ) -> Simulator:
        """The scorebook from the model's training seasons of the deliveries `known`, the bowler rule's
        usage from all of them (each match reads only the matches before its own), `spread` and `form`."""
        if not encoder.known_attached:
            encoder.attach_known(known)  # each match reads only the matches before its own
        seasons = known["season"].between(encoder.first_season, encoder.trained_until)
        if not seasons.any():
            raise ValueError(
                f"no known deliveries from the model's training seasons {encoder.first_season}-"
                f"{encoder.trained_until} to fit the scorebook on"
            )
        return cls(
            model, encoder, phases, Scorebook.fit(known[seasons]), BowlingUsage.build(known), spread=spread, form=form
        )

    def for_match(self, levels: dict[str, np.ndarray] | None, match_id) -> Simulator:
        """This simulator with the match's class offsets (`cricket_attn.inference.recent.recent_offsets`), if `levels`
        has them."""
        if not levels or str(match_id) not in levels:
            return self
        return replace(self, offsets=torch.as_tensor(levels[str(match_id)], dtype=torch.float32))

    @property
    def members(self) -> list[CricketTransformer]:
        return list(self.model.members) if isinstance(self.model, Ensemble) else [self.model]

    @property
    def max_len(self) -> int:
        return self.members[0].cfg.max_len

    def new_caches(self) -> list[SimulationCache]:
        return [SimulationCache(m.cfg.n_layers) for m in self.members]

    @torch.no_grad()
    def encode_innings(self, innings: pd.DataFrame, setup: InningsSetup | None = None) -> list[SimulationCache]:
        """The caches after every real ball of one innings (`share_rows` cuts them for earlier states). A
        model reading players' histories reads those of `setup`'s sides, by the slots the simulations use."""
        caches = self.new_caches()
        if len(innings):
            innings = innings.reset_index(drop=True)
            batch = self.encoder.encode(innings).collate([0])
            if self.encoder.history_balls:
                if setup is None:
                    raise ValueError("the model reads players' histories: encode_innings needs the innings' setup")
                batch.update(slot_histories(self.encoder, setup))
                for role, side in (("batter", setup.batting), ("bowler", setup.bowling)):
                    slot = {name: i for i, name in enumerate(side)}
                    batch[f"{role}_slot"] = torch.as_tensor([[slot[str(p)] for p in innings[role]]])
            self.model.eval()
            self.log_probs(batch, caches)
        return caches

    def log_probs(
        self, batch: dict[str, torch.Tensor], caches: list[SimulationCache], shift: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B, classes) the next ball's log-probabilities after feeding `batch` (B, T) into the caches, moved by
        the match's class offsets and each row's `shift` (B, classes), if any."""
        if isinstance(self.model, Ensemble):
            log_probs = self.model(batch, caches, last_only=True)[:, -1]
        else:
            log_probs = self.model(batch, caches[0], last_only=True)[:, -1].log_softmax(-1)
        if self.offsets is not None:
            log_probs = log_probs + self.offsets
        if shift is not None:
            log_probs = log_probs + shift
        return log_probs if self.offsets is None and shift is None else log_probs.log_softmax(-1)

    def form_offsets(self, state: InningsState) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(batting slots, classes) and (bowling slots, classes): what each slot's form adds to a ball's
        log-probabilities, as of the match's date (none for the slots that fill a short side); None without
        `form`."""
        if self.form is None:
            return None
        setup = state.setup
        if setup.date is None:
            raise ValueError("players' form needs the match's date (InningsSetup.date)")
        out = []
        for role, side, slots in (
            ("batter", setup.batting, len(state.batter_ids)),
            ("bowler", setup.bowling, len(state.bowler_ids)),
        ):
            offsets = torch.zeros(slots, len(OUTCOMES))
            offsets[: len(side)] = torch.as_tensor(self.form.offsets(role, side, setup.date), dtype=torch.float32)
            out.append(offsets)
        return out[0], out[1]

    def innings_draws(self, n: int, generator: torch.Generator | None) -> torch.Tensor | None:
        """(n,) each simulated innings' own z ~ N(0, spread^2), or None without a spread."""
        return torch.randn(n, generator=generator) * self.spread if self.spread else None

    def run_direction(self) -> torch.Tensor:
        """(classes,) the classes' run values in the scorebook, standardised: the direction of `tilt`."""
        runs = self.scorebook.runs.float()
        return (runs - runs.mean()) / runs.std()

    @staticmethod
    def tilt(probs: torch.Tensor, z: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """(B, classes) each row's distribution tilted by its innings' z along the direction u (`run_direction`):
        p (1 + z (u - E_p[u])), which sums to one and averages to p over z (clipped at zero, a case beyond
        three standard deviations of z at the spreads used)."""
        u = u.to(probs.dtype)
        tilted = probs * (1 + z[:, None] * (u[None, :] - (probs @ u)[:, None])).clamp(min=0)
        return tilted / tilted.sum(1, keepdim=True)

    @torch.no_grad()
    def roll(
        self,
        state: InningsState,
        caches: list[SimulationCache],
        bowlers: BowlerChoice,
        generator: torch.Generator | None = None,
        keep_states: bool = False,
    ):
        """Play every simulation of `state` to the end of its innings. `caches` hold the balls before the state
        (one row, shared, or one per simulation). Returns an InningsEnd, and with `keep_states` also each
        simulation's final state."""
        self.model.eval()
        n = state.n
        ends = {
            name: torch.zeros(n, dtype=torch.long)
            for name in ("runs", "wickets", "legal", "deliveries", "fours", "sixes")
        }
        if caches[0].keys[0] is None:
            if int(state.deliveries.max()) > 0:
                raise ValueError("the caches must hold the balls before the state")
            caches = self.new_caches()
        else:
            held = caches[0].keys[0].size(0)
            if held not in (1, n):
                raise ValueError(f"the caches hold {held} rows: give one (shared) or one per simulation ({n})")
            if held == 1:  # every simulation reads the one row's balls, held once
                caches = [
                    c.take_rows(torch.zeros(n, dtype=torch.long))
                    if c.shared is not None
                    else c.share_rows(torch.full((n,), c.length))
                    for c in caches
                ]
        # The players' and venue's rates are fixed per slot within the innings: their share of the numeric
        # layer is computed once, not at every ball (exact; about a third of a step's multiply-adds).
        by_slot = all([c.keep_rates(m, state.rates()) for m, c in zip(self.members, caches)])
        z = self.innings_draws(n, generator)
        u = None if z is None else self.run_direction()  # once per roll, not per ball
        form = self.form_offsets(state)
        alive = torch.arange(n)  # each row's simulation
        ended = torch.zeros(n, dtype=torch.bool)  # rows whose innings is over (their ends are kept)
        finals = []  # with keep_states: (simulations, their final states)
        cut_short = 0
        if int(state.deliveries.max()) == 0 and int(state.bowler_overs.sum()) == 0:  # a new innings: its first bowler
            state.start_over(bowlers.choose(state, generator))
        while True:
            full = torch.as_tensor(caches[0].balls()) >= self.max_len
            done = state.finished() | full
            new = done & ~ended
            if bool(new.any()):
                cut_short += int((full & new & ~state.finished()).sum())
                for name, values in ends.items():
                    values[alive[new]] = getattr(state, name)[new]
                if keep_states:
                    finals.append((alive[new], state.take(torch.nonzero(new)[:, 0])))
                ended = done
            # Ended rows are dropped from the batch once they are a quarter of it (copying the caches costs);
            # until then they take a null delivery each step, which changes nothing that is kept.
            if bool(done.all()):
                end = InningsEnd(**ends, cut_short=cut_short)
                if not keep_states:
                    return end
                order = torch.cat([ids for ids, _ in finals]).argsort()
                return end, InningsState.stack([part for _, part in finals]).take(order)
            if int(done.sum()) * 4 >= len(done) or bool(full.any()):  # a full row can take no more balls
                keep = torch.nonzero(~done)[:, 0]
                state, alive, ended = state.take(keep), alive[keep], ended[keep]
                z = None if z is None else z[keep]
                caches = [c.take_rows(keep) for c in caches]
                done = ended
            new_over = state.over_complete() & ~done
            if bool(new_over.any()):
                state.end_over(new_over)
                state.start_over(bowlers.choose(state, generator), new_over)
            shift = None if form is None else form[0][state.striker] + form[1][state.bowler]
            probs = self.log_probs(state.inputs(by_slot), caches, shift).exp()
            if z is not None:
                probs = self.tilt(probs, z, u)
            outcome = torch.multinomial(probs, 1, generator=generator)[:, 0]
            ball = self.scorebook.sample(outcome, generator)
            if bool(done.any()):
                ball = ball.where(~done)
            state.record(ball)

    def start(self, setup: InningsSetup, n: int, target: torch.Tensor | float | None = None) -> InningsState:
        return InningsState(setup, self.encoder, self.phases, n, target)


# The most simulations rolled at once. Each holds the keys and values of its own balls (2 layers x keys and
# values x 64 numbers x 4 bytes x up to 130 balls: about 130 KB an innings for each member at the default
# model's size), so larger runs are rolled this many at a time and the rollout's memory stays flat however
# many simulations are asked for.
MAX_ROWS = 4096
# What is kept of each simulation to its state's end, beside the rollout: its state's 28 per-simulation
# fields (`InningsState`) and its end, 1,400 bytes on a real innings with XIs of 12 (measured on the tensors by
# tests/simulation/test_rollout.py), with a margin for its result and indices: for the refusal of a --sims
# that would not fit.
BYTES_A_SIMULATION = 2048


def roll_in_chunks(
    sim: Simulator,
    states: InningsState,
    rows: torch.Tensor,
    caches,
    bowlers: BowlerChoice,
    generator: torch.Generator | None,
    keep_states: bool = False,
) -> InningsEnd:
    """`sim.roll` of one simulation from each state `states.take(rows)` names, MAX_ROWS at a time (a chunk's
    states taken when it is rolled); `caches(chunk)` gives a chunk's caches. Up to MAX_ROWS rows it is one
    roll, draw for draw. With `keep_states`, the end holds each simulation's final state (the same draws)."""
    ends = []
    for chunk in torch.arange(len(rows)).split(MAX_ROWS):
        rolled = sim.roll(states.take(rows[chunk]), caches(chunk), bowlers, generator, keep_states)
        ends.append(replace(rolled[0], final=rolled[1]) if keep_states else rolled)
    return InningsEnd.cat(ends)
