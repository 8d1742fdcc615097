"""`cricket-attn-attention`: pictures of what each head attends to over the matches given, and the
head-by-head report (the statistics and pictures themselves: cricket_attn.inference.attention)."""

from __future__ import annotations

import argparse
from pathlib import Path

from omegaconf import OmegaConf

from cricket_attn import progress
from cricket_attn.atomic import atomic_path
from cricket_attn.cli import add_tracking, check_out_folder, run_command, writing
from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules
from cricket_attn.inference.attention import (
    head_report,
    history_report,
    history_table,
    one_model,
    report_table,
)
from cricket_attn.inference.attention_pictures import draw_match
from cricket_attn.inference.reading import nothing_found, read_matches, with_earlier
from cricket_attn.inference.serving import load_trained


def parse_ball(text: str) -> tuple[int, int]:
    """`15.3` -> (15, 3): the third delivery of the over after 15 completed (overs counted from 0)."""
    over, _, ball = text.partition(".")
    if not (over.isdigit() and ball.isdigit()):
        raise ValueError(f"--ball {text}: give OVER.BALL, e.g. 15.3 (over counted from 0, ball from 1)")
    return int(over), int(ball)


def main(argv: list[str] | None = None) -> int:
    """`cricket-attn-attention`: pictures of what each head attends to, and the head-by-head report."""
    p = argparse.ArgumentParser(prog="cricket-attn-attention", description=main.__doc__.split(": ", 1)[1])
    p.add_argument("--model", required=True, help="MLflow model URI (runs:/..., models:/name@alias) or checkpoint")
    p.add_argument("--out", required=True, type=Path, help="folder for the PNGs and the report")
    p.add_argument("--match", help="draw this match only (its Cricsheet id); default: every match given")
    p.add_argument("--innings", type=int, help="with --match: this innings only (1, 2, ...)")
    p.add_argument("--ball", help="with --match and --innings: also draw ball OVER.BALL, e.g. 15.3 (over from 0)")
    p.add_argument(
        "--report",
        action="store_true",
        help="write the head-by-head report over every ball given (heads.md, heads.csv); without --match, draw nothing",
    )
    p.add_argument("--member", type=int, default=0, help="which model of an ensemble (each has its own heads)")
    p.add_argument("--data", default="ipl", help="data config in conf/data/ for the phase rules")
    p.add_argument(
        "--history",
        action="append",
        help="Cricsheet data of earlier matches, for a model that reads players' histories or records "
        "(repeatable; default: the data the model was trained on)",
    )
    add_tracking(p, experiment=False)
    p.add_argument("sources", nargs="+", help="Cricsheet zips, folders or match files")
    return run_command("cricket-attn-attention", draw_command, p.parse_args(argv))


def draw_command(args) -> str:
    """What `cricket-attn-attention` does once its arguments are read: the arguments checked, then the
    output folder, before the model is loaded; what it wrote, as a line."""
    if (args.innings is not None or args.ball) and not args.match:
        raise ValueError("--innings and --ball need --match")
    ball = parse_ball(args.ball) if args.ball else None
    if ball and args.innings is None:
        raise ValueError("--ball needs --innings")
    check_out_folder("--out", args.out)
    trained = load_trained(args.model, args.tracking_uri)
    model = one_model(trained.model, args.member)
    data = load_data_config(args.data)
    phases = PhaseRules.from_config(OmegaConf.to_container(data.phases, resolve=True))
    tables = read_matches(args.sources, project_path(data.data_dir), phases)
    if tables.deliveries.empty:
        raise ValueError(f"nothing to draw in {', '.join(args.sources)}: {nothing_found(args.sources, tables)}")
    reads = trained.encoder.reads_known  # players' histories and records from the earlier matches, as in training
    data_dir = project_path(data.data_dir)
    earlier = with_earlier(tables, trained.encoder, args.history, phases, data_dir, args.sources, reads)
    d = earlier.deliveries
    if reads:
        trained.encoder.attach_known(earlier.known)
    if args.match:
        d = d[d["match_id"].astype(str) == args.match]
        if d.empty:
            raise ValueError(f"--match {args.match}: no such match in {', '.join(args.sources)}")
    if args.innings is not None:
        played = sorted(int(i) for i in d.loc[~d["is_super_over"].astype(bool), "innings"].unique())
        if args.innings not in played:  # a super over is not drawn: its own tiny game
            has = ", ".join(map(str, played))
            raise ValueError(f"--innings {args.innings}: match {args.match} has no such innings (it has {has})")
    written = []
    with writing("--out", args.out):
        args.out.mkdir(parents=True, exist_ok=True)
        if args.report:
            report = head_report(model, encoder=trained.encoder, deliveries=d, desc="head report")
            with atomic_path(args.out / "heads.md") as tmp:
                tmp.write_text(report_table(report))
            with atomic_path(args.out / "heads.csv") as tmp:
                report.to_csv(tmp, index=False, float_format="%.6g")
            written += [args.out / "heads.md", args.out / "heads.csv"]
            print(report_table(report))
            if model.cfg.history_balls:
                readers = history_table(history_report(model, trained.encoder, d))
                with atomic_path(args.out / "histories.md") as tmp:
                    tmp.write_text(readers)
                written.append(args.out / "histories.md")
                print(readers)
        if args.match or not args.report:
            for _, match in progress.track(
                d.groupby("match_id", observed=True, sort=False), "drawing", total=d["match_id"].nunique(), unit="match"
            ):
                written += draw_match(model, trained.encoder, match, args.out, args.innings, ball)
    return f"written: {len(written)} file(s) in {args.out}"


if __name__ == "__main__":
    raise SystemExit(main())
