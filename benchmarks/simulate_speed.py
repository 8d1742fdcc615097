"""Simulation speed: simulated balls per second, the KV cache against recomputing, in one run.

    python benchmarks/simulate_speed.py   # the latest transformer run's model, or --model CHECKPOINT
    python benchmarks/simulate_speed.py --model ... --sims 1000 --device cuda

1. The model alone, one member and the whole model: N innings stepped ball by ball for 120 balls, feeding
   one new ball into the KV cache per step, against recomputing the whole prefix at every step.
2. The whole simulator (state update, bowler rule, sampling, scorebook, model): N innings of a real 2025
   match from ball 0 to their end, in simulated balls per second.
3. The same match before the toss (its file's info alone, the toss taken out): N simulations of the whole
   match (half with each side batting first), with every player's line and fantasy points (`project_before`), in
   seconds end to end.
Prints a table last; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from machine import cpu

from cricket_attn.config import DEFAULT_TRACKING_URI, load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.inference.kv_cache import KVCache
from cricket_attn.inference.serving import load_trained
from cricket_attn.model import Ensemble
from cricket_attn.simulation.before import project_before
from cricket_attn.simulation.fantasy import FantasyTable
from cricket_attn.simulation.rollout import Simulator
from cricket_attn.simulation.rules import BowlerChoice
from cricket_attn.simulation.setup import InningsSetup
from cricket_attn.tracking import latest_transformer_run


def model_steps(members, batch: dict[str, torch.Tensor], balls: int, cached: bool) -> float:
    """Seconds to step every row of `batch` through `balls` balls with every member."""
    start = time.perf_counter()
    for m in members:
        cache = KVCache(m.cfg.n_layers) if cached else None
        for t in range(balls):
            if cached:
                m({k: v[:, t : t + 1] for k, v in batch.items()}, cache, last_only=True)
            else:
                m({k: v[:, : t + 1] for k, v in batch.items()}, last_only=True)
    if batch["numeric"].is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", help="checkpoint or MLflow model URI (default: the latest transformer run's checkpoint)")
    p.add_argument("--sims", type=int, default=1000, help="innings simulated at once")
    p.add_argument("--match", default="1473438", help="a 2025 match whose first innings is simulated")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--before-only", action="store_true", help="time part 3 alone (the match before the toss)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    device = torch.device(args.device)
    trained = load_trained(args.model or latest_transformer_run(DEFAULT_TRACKING_URI).data.tags["checkpoint"])
    model = trained.model.to(device).eval()
    members = list(model.members) if isinstance(model, Ensemble) else [model]
    cfg = load_data_config("ipl")
    phases = PhaseRules.from_config(cfg.phases)
    tables = load_tables(None, phases, project_path(cfg.data_dir))
    d = tables.deliveries
    if trained.encoder.reads_known:  # records and histories, from the archive's matches before each one
        trained.encoder.attach_known(d)
    innings = d[(d["match_id"].astype(str) == args.match) & (d["innings"] == 1)].reset_index(drop=True)
    balls = min(120, len(innings))
    one = trained.encoder.encode(innings).collate([0])
    batch = {k: v.expand(args.sims, *v.shape[1:]).contiguous().to(device) for k, v in one.items()}
    rows = []
    for label, chosen in (
        () if args.before_only else (("one member", members[:1]), (f"the model ({len(members)} members)", members))
    ):
        model_steps(chosen, {k: v[:8] for k, v in batch.items()}, 4, True)  # warm-up
        cached = model_steps(chosen, batch, balls, cached=True)
        recomputed = model_steps(chosen, batch, balls, cached=False)
        rows.append(
            (f"model steps, {label}", args.sims * balls / cached, args.sims * balls / recomputed, recomputed / cached)
        )

    simulated = seconds = 0
    if device.type == "cpu":  # the simulator's state lives on the CPU; on a GPU only the model steps are timed
        sim = Simulator.build(model, trained.encoder, phases, d)
    if device.type == "cpu" and not args.before_only:
        state = sim.start(InningsSetup.from_table(innings, tables.matches), args.sims)
        bowlers = BowlerChoice.for_innings(state, sim.usage, innings["date"].iloc[0])
        start = time.perf_counter()
        end = sim.roll(state, sim.new_caches(), bowlers, torch.Generator().manual_seed(0))
        seconds = time.perf_counter() - start
        simulated = int(end.deliveries.sum())
        rows.append(
            (f"whole simulator, the model ({len(members)} members)", simulated / seconds, float("nan"), float("nan"))
        )

    before = None
    if device.type == "cpu":
        matches = tables.matches.assign(toss_winner=None, toss_decision=None)  # before the toss
        start = time.perf_counter()
        projected, lines = project_before(
            sim, matches, args.match, n=args.sims, seed=0, players=True, fantasy=FantasyTable.load()
        )
        before = time.perf_counter() - start
    print(
        f"\nmachine: {cpu()}, {args.threads} thread(s), torch "
        f"{torch.__version__}, device {args.device}; {args.sims} innings at once, {balls} balls"
    )
    print(f"{'':<48} {'balls/s cached':>15} {'recomputed':>12} {'speed-up':>9}")
    for name, fast, slow, ratio in rows:
        print(f"{name:<48} {fast:>15,.0f} {slow:>12,.0f} {ratio:>8.1f}x")
    if simulated:
        print(f"(whole simulator: {args.sims} first innings from ball 0, {simulated:,} deliveries in {seconds:.1f} s)")
    if before is not None:
        print(
            f"match {args.match} before the toss: {args.sims} simulations of the match (half with each side "
            f"batting first), "
            f"{len(lines)} player lines with fantasy points, in {before:.1f} s"
        )


if __name__ == "__main__":
    main()
