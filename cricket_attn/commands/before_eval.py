"""Before the first ball: how good the simulator's win probability is, against two match-level baselines.

    cricket-attn-before-eval --model outputs/<date>/<time>/checkpoints/refit/calibrated.ckpt --sims 200

Each test match with a result is simulated from the state before its first ball (its info alone: the XIs,
the venue, the date, the toss; `before.project_before`), and its chasing side's chance to win is scored against
what came of it (a tie is half a win). The XIs are those known at the toss (`before.at_the_toss`): a file lists
its sides after the match, in the order they batted and with whoever came in during it (the impact player
used); here each side is its XI named at the toss, in the order of each player's usual place in his last ten
matches. The yardsticks (`before_baselines`: a logistic regression on the two XIs' records as of the day, and
an Elo rating of the teams) are fitted on the matches through --train-until, their XIs the same way.

Brier score and log loss per match, the differences paired by match with 95% bootstrap intervals. Each match is
kept in --out as it is finished: stopped (Ctrl-C, killed), the same command again continues where it stopped.

Each player of the XIs' runs and wickets in the match (`--players`, the default) are scored from the same
simulations by the pinball loss of their 10/50/90% quantiles and the 10-90% coverage (of the randomised PIT,
`pit_coverage`: 0.8 for a forecast that is right), against his own last ten matches in an XI (an empirical
distribution) and the simulator with both XIs unknown to the model.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import time
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from cricket_attn import tracking
from cricket_attn.atomic import atomic_path
from cricket_attn.cli import add_tracking, check_memory, run_command
from cricket_attn.data.records import RecordBook
from cricket_attn.inference.serving import load_with_data
from cricket_attn.metrics import (
    markdown_table,
)
from cricket_attn.settings import count
from cricket_attn.simulation.before_baselines import BeforeBaselines
from cricket_attn.simulation.before_eval import (
    KEPT_BYTES_A_SIMULATION,
    LAST,
    MODELS,
    games_at_the_toss,
    real_figures,
    recent_quantiles,
    score,
    score_players,
    simulate_before,
)
from cricket_attn.simulation.rollout import BYTES_A_SIMULATION, Simulator


def unfinished_folder(
    args: argparse.Namespace, model: torch.nn.Module, data_key: str, matches: pd.DataFrame, test: pd.DataFrame
) -> Path:
    """Where the matches of an evaluation are kept as they are finished (`simulate_before`'s `done`): named by
    what decides them (the model's weights, the data's cache key: its sources' content, phases and schema, the
    simulations, the seed, whether the players are scored, each test match's XIs and toss), so a run of other
    settings does not read them; removed once the evaluation is written and logged. The code is not in the
    name: after a change to the simulator, start again (remove the folder)."""
    digest = hashlib.sha256()
    for tensor in model.state_dict().values():
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    chosen = matches[matches["match_id"].astype(str).isin(set(test["match_id"]))]
    columns = ["match_id", "team1_players", "team2_players", "team1_player_ids", "team2_player_ids", "toss_winner",
               "toss_decision", "venue", "date"]  # fmt: skip
    what = [data_key, args.sims, args.seed, args.players, chosen.reindex(columns=columns).astype(str).to_csv()]
    digest.update(repr(what).encode())
    return args.out / f".unfinished-{digest.hexdigest()[:16]}"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cricket-attn-before-eval", description=__doc__.split("\n")[0])
    p.error = lambda message: p.exit(2, f"{p.prog}: {message}\n")
    p.add_argument("--model", required=True, help="MLflow model URI or checkpoint")
    p.add_argument("--sims", type=count(1), default=200, help="simulations of each match (default %(default)s)")
    p.add_argument("--train-until", type=int, default=2024, help="the baselines' last training season")
    p.add_argument("--test", type=int, nargs="+", default=[2025, 2026], help="the seasons scored")
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="*", help="Cricsheet data (default: the --data config's sources)")
    p.add_argument(
        "--competition", action="append", help="only these competitions' matches are scored and fit the baselines"
    )
    p.add_argument("--matches", type=count(1), help="only the first N test matches (a quick look)")
    p.add_argument(
        "--players",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="score each player's runs and wickets too (twice the simulations; default: %(default)s)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("outputs/before"),
        help="folder for the report, the games and the players' lines (and the finished matches while it runs)",
    )
    p.add_argument("--seed", type=count(0), default=0)
    add_tracking(p)
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> str:
    start = time.perf_counter()
    # One match is simulated at a time (the finished ones are kept on disk), its two innings' states held while
    # it runs, twice with the players (their XIs known and unknown): refused before anything is read where that
    # would not fit; with the players, again once the matches are known (each one's draws are kept to the end).
    running = (2 if args.players else 1) * 2 * BYTES_A_SIMULATION
    check_memory("--sims", args.sims, per_unit=running)
    tracking.check_tracking_uri(args.tracking_uri)
    trained, phases, tables = load_with_data(args.model, args.tracking_uri, args.data, args.sources)
    d = tables.deliveries
    matches, games, left = games_at_the_toss(d, tables.matches, args.competition)
    book = getattr(trained.encoder, "record_book", None) or RecordBook(d)
    scored = games["season"].isin(args.test).to_numpy().copy()
    if args.matches:
        scored &= np.cumsum(scored) <= args.matches
    if not scored.any():
        raise ValueError(f"--test {args.test}: no match of these seasons to score before its first ball")
    baselines = BeforeBaselines(book, matches, games, args.train_until)
    test = games[scored].assign(**baselines.probabilities(games, scored)).reset_index(drop=True)
    if args.players:
        check_memory("--sims", args.sims, per_unit=running + len(test) * KEPT_BYTES_A_SIMULATION)
    torch.set_grad_enabled(False)
    sim = Simulator.build(trained.model, trained.encoder, phases, d)
    done = unfinished_folder(args, trained.model, tables.key, matches, test)
    resumed = len(list(done.glob("*.parquet"))) if done.exists() else 0
    test["simulator"], lines = simulate_before(sim, matches, test, args.sims, args.seed, args.players, done)
    table, paired = score(test, 0.5 / args.sims)
    players = []
    if args.players:
        real = real_figures(d, tables.matches)
        real = real.join(recent_quantiles(real))
        lines = lines.merge(real.drop(columns=["date", "player", "place"]), on=["match_id", "team", "key"], how="left")
        player_table, player_paired = score_players(lines)
        players = [
            f"Each player's runs and wickets, pinball loss of the 10/50/90% quantiles and 10-90% coverage of the "
            "randomised PIT (0.8 for a forecast that is right) "
            f"(recent: his last {LAST} matches in an XI; unknown: both XIs unknown to the model):\n\n"
            + markdown_table(player_table, 4),
            "Paired by match, baseline minus simulator (above 0: the simulator ahead):\n\n"
            + markdown_table(player_paired, 4),
        ]
    report = "\n\n".join(
        [
            f"Before the first ball ({trained.source}): {len(test)} matches of {', '.join(map(str, args.test))}"
            + (f" of {', '.join(args.competition)}" if args.competition else "")
            + f", {args.sims} simulations each, the toss known; baselines fitted through {args.train_until} "
            f"(Elo: K {baselines.k:g}, {baselines.carry:g} of a rating carried into a season). Left out of every "
            f"season: {', '.join(f'{v} {k}' for k, v in left.items())}.",
            "Brier score and log loss (the chasing side's chance; a tie half a win):\n\n" + markdown_table(table, 4),
            "Paired by match, baseline minus simulator (above 0: the simulator ahead), 95% bootstrap intervals:\n\n"
            + markdown_table(paired, 4),
            *players,
        ]
    )
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "before.md") as tmp:
        tmp.write_text(report + "\n")
    with atomic_path(out / "before.csv") as tmp:
        test.to_csv(tmp, index=False)
    if args.players:
        with atomic_path(out / "players.csv") as tmp:
            lines.drop(columns=[c for c in lines if c.endswith("_draws")]).to_csv(tmp, index=False)
    every = table.set_index("matches").loc["every match"]
    settings = {k: getattr(args, k) for k in ("sims", "train_until", "seed", "players")}
    settings |= {"test": ",".join(map(str, args.test)), "competitions": ",".join(args.competition or []) or "all"}
    run_id = tracking.log_report_run(
        args.tracking_uri,
        args.experiment,
        tracking.run_name("before", f"sims={args.sims}"),
        {"model_family": "simulator", "model": trained.source},
        report,
        {f"before/{m}_{metric}": every[f"{m}_{metric}"] for m, metric in product(MODELS, ("brier", "log_loss"))},
        settings,
        [(out / "before.md", None)],
    )
    shutil.rmtree(done, ignore_errors=True)  # written and logged: nothing to continue
    again = f", {resumed} matches read from a stopped run" if resumed else ""
    return f"{report}\n\nwritten: {out} ({time.perf_counter() - start:.0f} s{again}); MLflow run {run_id}"


def main(argv: list[str] | None = None) -> int:
    return run_command("cricket-attn-before-eval", run, parse_args(argv), also=(tracking.TrackingError,))


if __name__ == "__main__":
    raise SystemExit(main())
