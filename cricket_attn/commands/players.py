"""`cricket-attn-players`: what each player is worth, from the ball model.

    cricket-attn-players --model <checkpoint> --season 2025 --out players.csv --plots pictures/

Per player and role, per season and competition: runs above what an average player in his place was
expected to make (batting) or concede (bowling), dismissals avoided and wickets above expected, with 95%
intervals by match and a rank among those with enough balls (cricket_attn.valuation).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from cricket_attn import tracking
from cricket_attn.atomic import atomic_path
from cricket_attn.cli import (
    add_tracking,
    check_can_write_in,
    check_memory,
    check_out_folder,
    check_out_path,
    run_command,
    write_table,
    writing,
)
from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.data.sources import configured_sources
from cricket_attn.inference.reading import nothing_found, with_earlier
from cricket_attn.inference.serving import TrainedModel, load_trained
from cricket_attn.settings import count
from cricket_attn.valuation import reliability
from cricket_attn.valuation.players import MIN_BALLS, N_BOOT, summary, value_matches
from cricket_attn.valuation.plots import plot_card, plot_leaders
from cricket_attn.valuation.reliability import MIN_BALLS as RELIABILITY_BALLS

GROUPS = ("season", "competition")
MOST_PICTURES = 20  # groups whose leaders are drawn, the largest first


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cricket-attn-players", description=__doc__.split("\n")[0])
    p.error = lambda message: p.exit(2, f"{p.prog}: {message}\n")  # one line, as every refusal here (-h: usage)
    p.add_argument("--model", required=True, help="MLflow model URI (runs:/..., models:/name@alias) or checkpoint")
    p.add_argument("--out", required=True, type=Path, help="the players' table, .parquet or .csv")
    p.add_argument("--balls-out", type=Path, help="also every ball's values, .parquet or .csv")
    p.add_argument("--season", type=int, action="append", help="only these seasons (repeatable; default: all)")
    p.add_argument("--competition", action="append", help="only these competitions, as the files name them")
    p.add_argument("--match", action="append", help="only these match ids (repeatable)")
    p.add_argument(
        "--player",
        action="append",
        help="only these players, by any name they are written under or "
        "registry id; a name two players share is refused (repeatable)",
    )
    p.add_argument("--card", action="append", help="draw this player's card in --plots (by name or id; repeatable)")
    p.add_argument(
        "--by", nargs="*", choices=GROUPS, default=list(GROUPS), help="group each player's balls by these "
        "(default: season competition; none: one row per player and role over everything valued)",
    )  # fmt: skip
    p.add_argument("--min-balls", type=count(1), default=MIN_BALLS, help="balls to be ranked (default %(default)s)")
    p.add_argument("--boot", type=count(100), default=N_BOOT, help="bootstrap draws for the intervals")
    p.add_argument(
        "--min-balls-reliability", type=count(1), default=RELIABILITY_BALLS,
        help="balls in a season for --reliability (default %(default)s)",
    )  # fmt: skip
    p.add_argument("--seed", type=count(0), default=0)
    p.add_argument("--plots", type=Path, help="folder for the leaders' chart of each group and the players' cards")
    p.add_argument(
        "--reliability", action="store_true", help="also whether the values hold from each season valued to the "
        "next and between the odd and even matches of a season, against strike rate and economy "
        "(cricket_attn.valuation.reliability; beside --out as <name>_reliability.md)",
    )  # fmt: skip
    p.add_argument(
        "--top", type=top_count, default=15, help="players in each leaders' chart, 1-100 (default %(default)s)"
    )
    p.add_argument(
        "--data",
        help="data config in conf/data/ whose sources to value (default: the data the model was trained on, as its "
        "checkpoint names it; the phase rules and data folder are conf/data/ipl.yaml's)",
    )
    p.add_argument(
        "--history",
        action="append",
        help="Cricsheet data whose earlier matches give records, beside those valued (repeatable; default: the "
        "data the model was trained on)",
    )
    add_tracking(p)
    p.add_argument("--no-mlflow", action="store_true", help="write the files only, no MLflow run")
    p.add_argument(
        "sources", nargs="*", help="Cricsheet zips, folders or match files (default: --data's, else the model's data)"
    )
    return p.parse_args(argv)


def top_count(text: str) -> int:
    """--top: 1 to 100 players (a chart of more is unreadable, and of far more cannot be drawn)."""
    value = count(1)(text)
    if value > 100:
        raise argparse.ArgumentTypeError(f"{text}: must be at most 100")
    return value


def chosen(d: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """The deliveries of the matches asked for; none is one line naming what was asked."""
    keep = pd.Series(True, index=d.index)
    asked = []
    if args.season:
        keep &= d["season"].isin(args.season)
        asked.append(f"--season {' '.join(map(str, args.season))}")
    if args.competition:
        keep &= d["competition"].astype(str).isin(args.competition)
        asked.append(f"--competition {' '.join(args.competition)}")
    if args.match:
        keep &= d["match_id"].astype(str).isin(args.match)
        asked.append(f"--match {' '.join(args.match)}")
    if not keep.any():
        have = sorted(d["season"].unique().tolist())
        raise ValueError(f"{', '.join(asked)}: no match in the data (seasons {have[0]}-{have[-1]})")
    return d[keep]


def player_keys(trained: TrainedModel, d: pd.DataFrame, args: argparse.Namespace) -> dict[str, list[str]]:
    """Each player asked for (`--player`, `--card`) as the model keys him (the players' table's `player_id`):
    by his key, or by any name he is written under in `d` or his registry id. One player under two names
    (NA Saini, Navdeep Saini) is one; rows of his without an id (keyed by his name) go with those with one;
    a name of two registry ids (two players) is refused, naming them."""
    d = d[~d["is_super_over"].astype(bool)]  # a super over is not valued
    written = pd.concat(
        pd.DataFrame({"name": d[r].astype(str), "id": d[f"{r}_id"].astype(object), "key": trained.encoder.key(d, r)})
        for r in ("batter", "bowler")
    ).drop_duplicates()
    has_id = written["id"].notna() & (written["id"] != "")
    keys = {}
    for flag, players in (("--player", args.player), ("--card", args.card)):
        for player in players or []:
            here = (written["key"] == player) | (written["name"] == player) | (has_id & (written["id"] == player))
            found = sorted(set(written.loc[here, "key"]))
            if not found:
                raise ValueError(f"{flag} {player}: no ball batted or bowled in the matches valued")
            ids = set(written.loc[here & has_id, "id"])
            if len(ids) > 1 or (not ids and len(found) > 1):  # two registry ids, or two names of a name-keyed model
                named = ", ".join(sorted(ids) or found)
                raise ValueError(f"{flag} {player}: {len(ids) or len(found)} players ({named}); ask for one of them")
            keys[player] = found
    return keys


def reliability_path(args: argparse.Namespace) -> Path:
    return args.out.with_name(f"{args.out.stem}_reliability.md")


def run(args: argparse.Namespace) -> str:
    start = time.perf_counter()
    for flag, path in (("--out", args.out), ("--balls-out", args.balls_out)):
        if path is not None:
            check_out_path(path, flag)
    if args.reliability:
        check_can_write_in("--out", reliability_path(args), reliability_path(args).resolve().parents)
    outputs = [p.resolve() for p in (args.out, args.balls_out) if p is not None]
    if len(set(outputs)) < len(outputs):
        raise ValueError(f"--balls-out {args.balls_out}: the same file as --out; give it a name of its own")
    if args.plots is not None:
        check_out_folder("--plots", args.plots)
        if args.plots.resolve() in outputs:
            raise ValueError(f"--plots {args.plots}: the same path as an output table; give a folder of its own")
    if args.card and (args.plots is None or "season" not in args.by):
        raise ValueError(f"--card {args.card[0]}: a card needs --plots and the values by season (--by season ...)")
    if not args.no_mlflow:
        tracking.check_tracking_uri(args.tracking_uri)
    trained = load_trained(args.model, args.tracking_uri)  # a bad model fails before any data is read
    cfg = load_data_config(args.data or "ipl")
    phases = PhaseRules.from_config(OmegaConf.to_container(cfg.phases, resolve=True))
    sources = args.sources or (configured_sources(cfg.sources) if args.data else trained.encoder.sources)
    tables = load_tables(sources, phases, project_path(cfg.data_dir))
    if tables.deliveries.empty:
        raise ValueError(f"nothing to value in {', '.join(map(str, sources or ['the embedded archive']))}: "
                         f"{nothing_found(sources or [], tables)}")  # fmt: skip
    data = with_earlier(tables, trained.encoder, args.history, phases, project_path(cfg.data_dir), sources,
                        needed=trained.encoder.reads_known)  # fmt: skip
    skipped = [s.reason for s in tables.skipped] + data.skipped
    filled, known, matches, notes = data.deliveries, data.known, data.matches, data.notes
    valued = chosen(filled, args)
    refused = trained.cannot_take(valued)
    valued = valued[~valued["match_id"].astype(str).isin(refused)]
    if valued.empty:
        raise ValueError(f"nothing to value: the model takes none of the matches ({next(iter(refused.values()))})")
    keys = player_keys(trained, valued, args)
    if args.reliability and not reliability.consecutive_seasons(valued):
        raise ValueError(
            "--reliability: needs two consecutive seasons among those valued (e.g. --season 2024 --season 2025)"
        )
    by = list(args.by)
    # The bootstrap holds a few (players, draws) tables of each role at once: refused before the valuation
    # where they would not fit (--boot 1e9 asked for 551 GiB after 20 s). The estimate is an upper figure: on
    # IPL 2025 (74 matches, 166 players a role) 21.8 KB a draw, where the peak memory grew by 10.9 KB a draw
    # from --boot 1,000 to 128,000 (1.30 to 2.68 GB; docs/log/2026-11-27.md, twentieth session).
    rows = max(valued.groupby([*by, player], observed=True).ngroups for player in ("batter", "bowler"))
    check_memory("--boot", args.boot, per_unit=8 * (valued["match_id"].nunique() + 16 * rows))
    balls, table = value_matches(trained, valued, known, matches, by, args.min_balls, args.boot, args.seed)
    table = table.sort_values([*by, "role", "rank", "balls"], ascending=[True] * (len(by) + 2) + [False])
    for flag, players in (("--player", args.player), ("--card", args.card)):
        for player in players or []:
            if not table["player_id"].isin(keys[player]).any():  # on a ball as batter, but every one a wide
                raise ValueError(f"{flag} {player}: no ball faced or bowled in the matches valued")
    pictures = draw(table, args, by, keys) if args.plots is not None else []  # every player's, before --player
    if args.player:
        table = table[table["player_id"].isin([k for p in args.player for k in keys[p]])]
    if args.balls_out is not None:  # before the table: a refusal here leaves no new --out behind
        write_table(balls, args.balls_out, "--balls-out")
    write_table(table, args.out)
    report = summary(balls, table, by, args.min_balls, args.player) + "".join(f"\nnote: {note}" for note in notes)
    if trained.encoder.reads_known:
        report += f"\nrecords from: {', '.join(map(str, sources or ['embedded']))}" + (
            f" and {data.known_from}" if known is not filled else ""
        )
    if args.reliability:
        report += "\n\n" + write_reliability(balls, args)
    if not args.no_mlflow:
        run_id = log_run(args, trained.source, balls, table, pictures, report)
        report += f"\nMLflow run {run_id}"
    skipped += [f"{reason}; not valued" for reason in refused.values()]
    return (
        f"{report}\nskipped: {len(skipped)}"
        + "".join(f"\n  {reason}" for reason in skipped)
        + f"\nwritten: {args.out} ({time.perf_counter() - start:.1f} s)"
    )


def draw(table: pd.DataFrame, args: argparse.Namespace, by: list[str], keys: dict[str, list[str]]) -> list[Path]:
    """The leaders' chart of each group (the `MOST_PICTURES` largest), and each --card player's card (`keys`:
    as `player_keys` found him)."""
    pictures = []
    groups = table.groupby(by, observed=True, sort=False) if by else [((), table)]
    groups = sorted(groups, key=lambda g: -len(g[1]))[:MOST_PICTURES]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        name = "_".join(str(k).replace(" ", "-").replace("/", "-") for k in key) or "all"
        pictures.append(plot_leaders(group, args.plots / f"leaders_{name}.png", args.top, " ".join(map(str, key))))
    for player in args.card or []:
        safe = player.replace(" ", "-").replace("/", "-")
        pictures.append(plot_card(table, keys[player], args.plots / f"card_{safe}.png"))
    return pictures


def write_reliability(balls: pd.DataFrame, args: argparse.Namespace) -> str:
    """The reliability report (`valuation.reliability.report`), also written beside --out."""
    text = reliability.report(balls, args.min_balls_reliability, args.boot, args.seed)
    path = reliability_path(args)
    with writing("--out", path), atomic_path(path) as tmp:
        tmp.write_text(text + "\n")
    return text


def log_run(
    args: argparse.Namespace, model: str, balls: pd.DataFrame, table: pd.DataFrame, pictures: list[Path], report: str
) -> str:
    """An MLflow run of family "players": the settings, the sums, the table and the pictures as artifacts."""
    uri = args.tracking_uri
    seasons = sorted(balls["season"].unique().tolist())
    run_id = tracking.start_run(
        uri,
        args.experiment,
        tracking.run_name("players", f"seasons={seasons[0]}-{seasons[-1]}"),
        {"model_family": "players", "model": model},
        description=report,
    )
    with tracking.ending(uri, run_id):
        tracking.log_params(
            uri,
            run_id,
            {"by": ",".join(args.by) or "none", "min_balls": str(args.min_balls), "boot": str(args.boot),
             "seasons": ",".join(map(str, seasons)), "competitions": ",".join(args.competition or []) or "all"},
        )  # fmt: skip
        client = tracking.MlflowClient(uri)
        faced = balls[balls["faced"]]
        for name, value in {
            "players/matches": balls["match_id"].nunique(),
            "players/runs_above_expected_per_ball": faced["runs_above_expected"].mean(),
            "players/runs_saved_per_ball": balls["runs_saved"].mean(),
            "players/wickets_above_expected_per_ball": balls["wickets_above_expected"].mean(),
        }.items():
            client.log_metric(run_id, name, float(value))
        client.log_artifact(run_id, str(args.out))
        if args.reliability:
            client.log_artifact(run_id, str(reliability_path(args)))
        for picture in pictures:
            client.log_artifact(run_id, str(picture), "pictures")
    return run_id


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run_command("cricket-attn-players", run, args)
    except tracking.TrackingError as err:
        print(f"cricket-attn-players: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
