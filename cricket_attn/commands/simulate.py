"""`cricket-attn-simulate`: projected totals and win probabilities, by simulating matches ball by ball.

    cricket-attn-simulate --model runs:/<run_id>/model --sims 100 --out projections.parquet matches.zip live.json

One row per state simulated: by default the start of every over of both innings (every delivery with
--every-ball), and for a match in progress its current state. Each row has the score, the projected total
of the innings being batted (mean and 10/50/90% quantiles), the chasing side's win probability (a tie
counts half) and its Monte Carlo standard error. With --players-out, each player's line in the match from
each state, over the same simulations (`cricket_attn.simulation.lines`).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

import pandas as pd
import torch
from omegaconf import OmegaConf

from cricket_attn import cli, progress, tracking
from cricket_attn.commands._scoring import CommandSummary, scoring_parser
from cricket_attn.config import DEFAULT_EXPERIMENT, load_data_config, project_path
from cricket_attn.data.cricsheet import match_before
from cricket_attn.data.deliveries import PhaseRules, build_tables
from cricket_attn.data.sources import MatchFile
from cricket_attn.inference import reading
from cricket_attn.inference.recent import level_by_default, since_training, strength
from cricket_attn.inference.serving import load_trained
from cricket_attn.simulation.before import (
    check_before,
    lines_before,
    listed_as_deliveries,
    project_before,
    side_chances,
)
from cricket_attn.simulation.fantasy import FantasyTable
from cricket_attn.simulation.lines import BYTES_A_DRAW, DRAW_COLUMNS, draw_table, last_state
from cricket_attn.simulation.match import (
    PLAYER_COLUMNS,
    PROJECTION_COLUMNS,
    line_table,
    most_states,
    project_match,
)
from cricket_attn.simulation.plots import plot_before, plot_match
from cricket_attn.simulation.rollout import BYTES_A_SIMULATION, MAX_SPREAD, SPREAD, Simulator
from cricket_attn.simulation.rules import not_simulated
from cricket_attn.simulation.what_if import choice_report


@dataclass
class SimulationSummary(CommandSummary):
    states: int = 0
    sims: int = 0
    player_lines: str = ""  # what --players-out wrote
    player_draws: str = ""  # what --draws-out wrote
    chances: list[str] = field(default_factory=list)  # each match before its first ball: each side's chance
    run_id: str = ""  # the MLflow run logged
    choices: list[str] = field(default_factory=list)  # --next-over-bowlers, --next-batters: a table per live match

    def counts(self) -> list[str]:
        return [
            f"matches simulated:  {self.matches:,}",
            f"states:             {self.states:,} ({self.sims:,} simulations each)",
            *([f"player lines:       {self.player_lines}"] if self.player_lines else []),
            *([f"player draws:       {self.player_draws}"] if self.player_draws else []),
            *self.chances,
            *([f"MLflow run:         {self.run_id}"] if self.run_id else []),
        ]

    def __str__(self) -> str:
        return "\n\n".join([super().__str__(), *filter(None, self.choices)])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = scoring_parser(
        "cricket-attn-simulate",
        __doc__.split("\n")[0],
        "Cricsheet data of earlier matches: the scorebook of the model's training seasons, the sides' "
        "bowling, players' records and histories, the league's recent level (repeatable; default: the data "
        "the model was trained on, as its checkpoint names it)",
        recent_level=None,
        sources="*",
    )
    p.add_argument(
        "--sims",
        type=int,
        default=100,
        help="simulations per state (default 100; the standard "
        "error of a win probability is at most 0.5 / sqrt(sims), 0.05)",
    )
    p.add_argument("--every-ball", action="store_true", help="a state before every delivery, not every over")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--spread",
        type=strength(MAX_SPREAD),
        default=SPREAD,
        help="innings-level spread: each simulated innings "
        "runs hot or cold by its own draw (cricket_attn.simulation.rollout; default %(default)g, chosen on "
        "2024); 0: every ball from the model's distribution alone",
    )
    p.add_argument(
        "--plots",
        type=Path,
        help="folder for each match's pictures: the worm against the projected "
        "total (<match>-worm.png) and the win probability (<match>-win.png)",
    )
    p.add_argument(
        "--players-out",
        type=Path,
        help="also write each player's line in the match from each state (.parquet or .csv; one row per player "
        "and state: his runs, balls, fours, sixes, wickets, balls bowled, runs conceded and fantasy points, each "
        "one's mean and 10/50/90%% quantiles and his figures so far, and the chances of 30+, 50+, 2+ and 3+ "
        "wickets, of batting, bowling and getting out), over the same simulations as the projections",
    )
    p.add_argument(
        "--draws-out",
        type=Path,
        help="also write every player's figures and fantasy points in each simulation from each match's latest "
        "state (before the first ball, the state now, or a match over: its last state simulated; .parquet or .csv, "
        "one row per player and simulation): what players do together in one simulated match",
    )
    p.add_argument(
        "--fantasy",
        default="t20",
        metavar="TABLE",
        help="with --players-out or --draws-out, each player's fantasy points by conf/fantasy/TABLE.yaml (default "
        "%(default)s: "
        "a common T20 table; copy it to make your platform's)",
    )
    p.add_argument(
        "--next-over-bowlers",
        action="store_true",
        help="for each match in progress, print the win "
        "probability under each bowler the fielding side may give the next over to",
    )
    p.add_argument(
        "--next-batters",
        action="store_true",
        help="for each match in progress, print the win probability with each player yet to bat as the next to come in",
    )
    p.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help="MLflow experiment (default: %(default)s)")
    p.add_argument("--no-mlflow", action="store_true", help="write the files only, no MLflow run")
    before = p.add_argument_group(
        "a match before its first ball, written on the command line instead of in a file (with --teams, "
        "--xi twice and --venue; the rest optional)"
    )
    before.add_argument("--teams", nargs=2, metavar="TEAM", help="the two sides, as the data names them")
    before.add_argument(
        "--xi",
        action="append",
        metavar="PLAYERS",
        help="a side's players in batting order, comma-separated, as the data names them; twice, in --teams' order",
    )
    before.add_argument("--venue", help="the ground, as the data names it (with --city where the data gives one)")
    before.add_argument("--city")
    before.add_argument("--date", type=date.fromisoformat, help="the day, YYYY-MM-DD (default: today)")
    before.add_argument(
        "--toss",
        nargs=2,
        metavar=("WINNER", "DECISION"),
        help="who won the toss and chose to bat or field (default: not yet tossed: both orders, half each)",
    )
    before.add_argument(
        "--event", help="the competition's name as the data writes it (default: the IPL; none for a T20I)"
    )
    before.add_argument("--team-type", choices=("club", "international"), default="club")
    before.add_argument("--match-id", default="before", help="the match's name in the outputs (default: %(default)s)")
    return p.parse_args(argv)


def written_match(args: argparse.Namespace, phases: PhaseRules) -> list[MatchFile]:
    """The match `--teams`, `--xi`, ... write on the command line, as a match file of its info alone, read and
    checked as the simulator checks a file before the first ball (`before.check_before`): what the form
    lacks or gets wrong, a ValueError in one line, before any model or data is read."""
    given = [f"--{n.replace('_', '-')}" for n in ("xi", "venue", "city", "date", "toss", "event") if getattr(args, n)]
    if args.teams is None:
        if given:
            raise ValueError(f"{given[0]} describes a match written on the command line: give --teams too")
        if not args.sources:
            raise ValueError("give match files (zips, folders, cricsheet: names) or a match: --teams, --xi, --venue")
        return []
    if args.teams[0] == args.teams[1]:
        raise ValueError(f"--teams {args.teams[0]!r} {args.teams[1]!r}: two different sides")
    if len(args.xi or []) != 2 or args.venue is None:
        raise ValueError("--teams: give each side's players with --xi, twice (in --teams' order), and --venue")
    if args.toss is not None and (args.toss[0] not in args.teams or args.toss[1] not in ("bat", "field")):
        raise ValueError(f"--toss {args.toss[0]!r} {args.toss[1]!r}: one of --teams, then bat or field")
    xis = []
    for team, xi in zip(args.teams, args.xi, strict=True):
        names = [name.strip() for name in xi.split(",")]
        if not all(names):
            raise ValueError(f"--xi of {team}: an empty name (two commas together, or one at an end)")
        xis.append(names)
    club = args.team_type == "club"
    event = args.event if args.event is not None else ("Indian Premier League" if club else None)
    toss = tuple(args.toss) if args.toss else None
    written = match_before(
        args.teams, xis, args.venue, args.date or date.today(), city=args.city, toss=toss, event=event,
        team_type=args.team_type, match_id=args.match_id,
    )  # fmt: skip
    alone = build_tables([written], phases)
    if alone.skipped:
        raise ValueError(alone.skipped[0].reason)
    check_before(alone.matches.iloc[0])
    return [written]


def run(args: argparse.Namespace) -> SimulationSummary:
    start = time.perf_counter()
    if args.sims < 1:
        raise ValueError(f"--sims {args.sims}: at least one simulation per state")
    cli.check_out_path(args.out)
    cfg = load_data_config(args.data)
    phases = PhaseRules.from_config(OmegaConf.to_container(cfg.phases, resolve=True))
    written = written_match(args, phases)  # a match on the command line: what it lacks, before any work
    if not args.no_mlflow:
        tracking.check_tracking_uri(args.tracking_uri)
    fantasy = None
    outputs = {"--out": args.out}
    for flag, path in (("--players-out", args.players_out), ("--draws-out", args.draws_out)):
        if path is not None:
            cli.check_out_path(path, flag)
            same = [f for f, other in outputs.items() if other.resolve() == path.resolve()]
            if same:
                raise ValueError(f"{flag} {path}: the same file as {same[0]}; give another")
            outputs[flag] = path
    if len(outputs) > 1:  # the players' lines or draws: their fantasy points
        fantasy = FantasyTable.load(args.fantasy)
    if args.plots:
        cli.check_out_folder("--plots", args.plots)
    trained = load_trained(args.model, args.tracking_uri)
    tables = reading.read_matches(args.sources, project_path(cfg.data_dir), phases, written)
    if written and any(d.match_id == written[0].match_id for d in tables.duplicates):  # the sources' was read
        raise ValueError(f"--match-id {args.match_id}: a match of the sources has that id; give another")
    summary = SimulationSummary(skipped=reading.left_out(tables), out=str(args.out), model=trained.source)
    if args.strict and tables.skipped:
        raise ValueError(f"--strict: {len(tables.skipped)} file(s) skipped, first: {tables.skipped[0].reason}")
    # A match file of its info alone (the sides named, no ball bowled) is simulated from before its first ball.
    m = tables.matches
    unplayed = (m["n_deliveries"] == 0) & m["winner"].isna() & m["result"].isna() if len(m) else None
    before = m.loc[unplayed, "match_id"].astype(str).tolist() if len(m) else []  # (one abandoned has a result)
    if tables.deliveries.empty and not before:
        raise ValueError(
            f"nothing to simulate in {', '.join(args.sources)}: {reading.nothing_found(args.sources, tables)}"
        )
    tables, refused = trained.playable(tables, scheduled=True)  # before any tensor is built
    sets = {
        **not_simulated(tables.deliveries),
        **not_simulated(tables.matches[tables.matches["match_id"].isin(before)]),
    }
    before = [m for m in before if m not in sets]
    tables = replace(tables, deliveries=tables.deliveries[~tables.deliveries["match_id"].astype(str).isin(sets)])
    refused += list(sets.values())
    summary.skipped += [f"{reason}; not simulated" for reason in refused]
    # One match's states are simulated together (rolled in chunks, `rollout.MAX_ROWS`); what is kept of each
    # simulation grows with --sims: refused before the model runs where it would not fit.
    most = most_states(tables.deliveries, args.every_ball)
    # With --draws-out, a row per listed player (12 a side at most) and simulation of every match is kept to the
    # end, and joined into one table before it is written (twice that at the last).
    drawn_rows = (tables.deliveries["match_id"].nunique() + len(before)) * 24 if args.draws_out else 0
    per_sim = 2 * most * BYTES_A_SIMULATION + 2 * drawn_rows * BYTES_A_DRAW  # a first innings' chases too
    cli.check_memory("--sims", args.sims, per_unit=per_sim)
    if args.strict and refused:
        raise ValueError(f"--strict: {refused[0]}")
    data = reading.with_earlier(tables, trained.encoder, args.history, phases, project_path(cfg.data_dir), args.sources)
    mine = data.matches["match_id"].isin(tables.matches["match_id"])  # their listed players' ids filled by name
    tables, known = replace(tables, deliveries=data.deliveries, matches=data.matches[mine]), data.known
    summary.known_from, summary.notes = data.known_from, data.notes
    if before and len(known):  # no player, ground or league has a record before the data's first match
        first = pd.Timestamp(known["date"].min()).date()
        dated = tables.matches.set_index(tables.matches["match_id"].astype(str))["date"]
        early = [m for m in before if pd.Timestamp(dated[m]).date() < first]
        summary.skipped += [
            f"match {m}: info.dates: {pd.Timestamp(dated[m]).date()} is before the data's first match ({first}); "
            "not simulated"
            for m in early
        ]
        before = [m for m in before if m not in early]
    torch.set_grad_enabled(False)
    if args.recent_level is None:
        args.recent_level = level_by_default(trained.encoder)
    levels, form = since_training(trained.model, trained.encoder, known, args.recent_level, args.form)
    sim = Simulator.build(trained.model, trained.encoder, phases, known, args.spread, form)
    frames, lines, drawn = [], [], []
    groups = list(tables.deliveries.groupby("match_id", sort=False, observed=True))
    # Each match: its projections (and the players' draws), or the reason it was skipped. A match begun is
    # projected from its deliveries, one not begun (its info alone) from before its first ball.
    players = bool(args.players_out or args.draws_out)
    settings = dict(n=args.sims, seed=args.seed, players=players, draws=players)
    jobs = [
        (
            match_id,
            lambda here, match=match: project_match(
                here, match, tables.matches, every_ball=args.every_ball, **settings
            ),
        )
        for match_id, match in groups
    ] + [
        (match_id, lambda here, m=match_id: project_before(here, tables.matches, m, **settings)) for match_id in before
    ]
    for match_id, project in progress.track(jobs, "simulating matches", unit="match"):
        try:
            projected = project(sim.for_match(levels, match_id))
            if players:
                projected, sides = projected
                if args.players_out and sides:
                    lines.append(lines_before(sides, fantasy) if match_id in before else line_table(sides, fantasy))
                if args.draws_out and sides:
                    drawn.append(draw_table(last_state(sides), fantasy))
            frames.append(projected)
        except ValueError as err:
            reason = str(err) if str(match_id) in str(err) else f"match {match_id}: {err}"
            if args.strict:
                raise ValueError(f"--strict: {reason}") from None
            summary.skipped.append(reason)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(PROJECTION_COLUMNS))
    if out.empty:
        raise ValueError(f"nothing simulated: {summary.skipped[0] if summary.skipped else 'no regular innings'}")
    cli.check_probabilities(out, ["win_probability"], whole=False)
    if args.players_out:  # checked whole before any table is written
        lines = pd.concat(lines, ignore_index=True) if lines else pd.DataFrame(columns=list(PLAYER_COLUMNS))
        cli.check_probabilities(lines, [c for c in PLAYER_COLUMNS if c.startswith("p_")], whole=False)
    cli.write_table(out, args.out)
    if args.players_out:
        cli.write_table(lines, args.players_out, "--players-out")
        summary.player_lines = f"{len(lines):,} ({args.players_out})"
    if args.draws_out:
        drawn = pd.concat(drawn, ignore_index=True) if drawn else pd.DataFrame(columns=list(DRAW_COLUMNS))
        cli.write_table(drawn, args.draws_out, "--draws-out")
        summary.player_draws = f"{len(drawn):,} ({args.draws_out})"
    simulated = [(match_id, match) for match_id, match in groups if str(match_id) in set(out["match_id"])]
    pictures = []
    if args.plots:
        with cli.writing("--plots", args.plots):
            for match_id, match in simulated:
                pictures += plot_match(out[out["match_id"] == str(match_id)], match, args.plots)
            for match_id in [m for m in before if m in set(out["match_id"])]:  # before the first ball
                mine = lines[lines["match_id"] == match_id] if args.players_out else None
                pictures += plot_before(out[out["match_id"] == match_id], mine, args.plots)
    for question in [q for q, asked in (("bowler", args.next_over_bowlers), ("batter", args.next_batters)) if asked]:
        for match_id, match in simulated:
            try:
                summary.choices.append(
                    choice_report(
                        sim.for_match(levels, match_id), match, tables.matches, question, args.sims, args.seed
                    )
                )
            except ValueError as err:  # e.g. no one left to come in
                summary.choices.append(f"match {match_id}: no choice of {question}: {err}")
    projected_before = [m for m in before if m in set(out["match_id"])]
    for match_id, sides in side_chances(out[out["match_id"].isin(projected_before)]).groupby("match_id", sort=False):
        chances = ", ".join(f"{r.team} {r.win_probability:.1%}" for r in sides.itertuples())
        summary.chances.append(
            f"before the first ball, match {match_id}: {chances} (Monte Carlo s.e. "
            f"{sides['win_probability_se'].iloc[0]:.1%})"
        )
    listed = listed_as_deliveries(tables.matches, projected_before)
    simulated_balls = pd.concat([tables.deliveries, listed], ignore_index=True)
    summary.unknown = reading.unknown_to(trained.encoder, simulated_balls)
    summary.notes += reading.unknown_places(trained.encoder, simulated_balls)  # a match's new ground or league
    summary.matches, summary.states, summary.sims = int(out["match_id"].nunique()), len(out), args.sims
    summary.seconds = time.perf_counter() - start
    if not args.no_mlflow:
        try:
            summary.run_id = log_run(args, trained.source, summary, pictures)
        except Exception as err:  # the files are whole and stay: say so in the one line
            failed = f"{args.out} written; its MLflow run failed: {type(err).__name__}: {err}"
            raise tracking.TrackingError(failed) from None
    return summary


def log_run(args: argparse.Namespace, model: str, summary: SimulationSummary, pictures: list[Path]) -> str:
    """An MLflow run of family "simulate": the settings, the counts and each side's chance before a match's
    first ball as the description, the projections, the players' lines and the pictures as artifacts."""
    params = {"sims": args.sims, "seed": args.seed, "spread": args.spread, "every_ball": args.every_ball}
    params["fantasy"] = args.fantasy if args.players_out or args.draws_out else "none"
    files = [args.out, *[path for path in (args.players_out, args.draws_out) if path]]
    return tracking.log_report_run(
        args.tracking_uri,
        args.experiment,
        tracking.run_name("simulate", f"sims={args.sims}"),
        {"model_family": "simulate", "model": model},
        str(summary),
        {"simulate/matches": summary.matches, "simulate/states": summary.states},
        params,
        [(path, None) for path in files] + [(picture, "pictures") for picture in pictures],
    )


def main(argv: list[str] | None = None) -> int:
    return cli.run_command("cricket-attn-simulate", run, parse_args(argv), also=(tracking.TrackingError,))


if __name__ == "__main__":
    sys.exit(main())
