"""cricket-attn-simulate on real matches: one row per over start, a live match's current state, the same
numbers for the same seed, and bad input refused in one line or skipped and listed."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from cricket_attn.commands.simulate import main, parse_args, run
from cricket_attn.simulation.lines import DRAW_COLUMNS
from cricket_attn.simulation.match import PLAYER_COLUMNS, PROJECTION_COLUMNS, over_starts
from tests.commands.test_predict import LIVE_MATCH, live_copy
from tests.conftest import FIXTURES
from tests.data.test_sources import GOOD, UPPER, broken_zips


@pytest.fixture(scope="module")
def checkpoint(tracked_run):
    return tracked_run["results"]["checkpoint"]


def args_list(checkpoint, out, sims=4) -> list[str]:
    """The command's arguments before its options and sources: few simulations, the fixtures as history."""
    return ["--model", checkpoint, "--out", str(out), "--sims", str(sims), "--history", str(FIXTURES), "--no-mlflow"]


def args(checkpoint, out, *sources, sims=4, extra=()):
    return parse_args([*args_list(checkpoint, out, sims), *extra, *map(str, sources)])


def test_every_over_start_and_the_live_state(checkpoint, tmp_path, deliveries):
    live = live_copy(tmp_path)
    ended = tmp_path / "1473439.json"
    shutil.copy(FIXTURES / "1473439.json", ended)
    out = tmp_path / "projections.parquet"
    summary = run(args(checkpoint, out, ended, live, extra=("--plots", str(tmp_path / "plots"))))
    frame = pd.read_parquet(out)
    assert list(frame.columns) == list(PROJECTION_COLUMNS) and summary.matches == 2
    full = deliveries[deliveries["match_id"] == "1473439"]
    assert (frame["match_id"] == "1473439").sum() == sum(len(over_starts(full[full["innings"] == i])) for i in (1, 2))
    live_rows = frame[frame["match_id"] == f"{LIVE_MATCH}_live"]
    current = live_rows.iloc[-1]  # the chase stopped after 3 balls of over 12
    assert current["innings"] == 2 and current["over"] == 12 and current["legal_balls"] >= 12 * 6 + 3 - 1
    assert frame["win_probability"].between(0, 1).all() and (frame["sims"] == 4).all()
    pictures = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert pictures == sorted(f"{m}-{kind}.png" for m in ("1473439", f"{LIVE_MATCH}_live") for kind in ("worm", "win"))
    assert all((tmp_path / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for name in pictures)
    # Same seed, same numbers (the live match alone: each match has its own draws), with the players' lines
    # beside over the same simulations.
    again, players, draws = tmp_path / "again.parquet", tmp_path / "players.csv", tmp_path / "draws.csv"
    extra = ("--players-out", str(players), "--draws-out", str(draws))
    assert "player lines:" in str(run(args(checkpoint, again, live, extra=extra)))
    pd.testing.assert_frame_equal(live_rows.reset_index(drop=True), pd.read_parquet(again))
    lines = pd.read_csv(players, dtype={"match_id": str})
    assert list(lines.columns) == list(PLAYER_COLUMNS) and (lines["sims"] == 4).all()
    assert lines["fantasy_mean"].notna().all()  # by the default table, conf/fantasy/t20.yaml
    per_state = lines.groupby(["innings", "delivery_index", "team"]).size()
    assert len(per_state) == 2 * len(live_rows) and (per_state >= 11).all()  # both sides from every state
    chase = lines[lines["innings"] == 2]
    now = chase[chase["delivery_index"] == chase["delivery_index"].max()]  # the state now, in the chase
    first_side = now[now["p_bats"].notna() & (now["team"] != current["batting_team"])]
    assert (first_side["runs_q10"] == first_side["runs_q90"]).all()  # their innings is over: known, not drawn
    # --draws-out: the state now alone, each player's 4 simulations; his line there is his draws summed up.
    every = pd.read_csv(draws)
    assert set(zip(every["innings"], every["delivery_index"])) == {(2, int(current["delivery_index"]))}
    assert every.groupby(["team", "player"])["sim"].apply(sorted).map([0, 1, 2, 3].__eq__).all()
    drawn = every.groupby(["team", "player"])[["runs", "conceded", "fantasy"]].mean()
    np.testing.assert_allclose(
        now.set_index(["team", "player"]).loc[drawn.index, ["runs_mean", "conceded_mean", "fantasy_mean"]], drawn
    )
    # A model reading records as of the day has the league's level among its inputs, so by default no offset
    # is learnt on top (as --recent-level 0); with one from the known matches since training, on the same
    # seed, the projections move.
    plain, level = tmp_path / "plain.parquet", tmp_path / "level.parquet"
    run(args(checkpoint, plain, live, extra=("--recent-level", "0")))
    run(args(checkpoint, level, live, extra=("--recent-level", "200")))
    unmoved, moved = pd.read_parquet(plain), pd.read_parquet(level)
    assert moved["win_probability"].between(0, 1).all() and len(moved) == len(live_rows)
    pd.testing.assert_frame_equal(unmoved, live_rows.reset_index(drop=True))
    assert not moved["projected_total"].equals(live_rows["projected_total"].reset_index(drop=True))
    # With players' form from the known matches since training (a 2026 match: its sides played in 2025), on
    # the same seed, they move too.
    later = tmp_path / "later" / "1527675.json"
    later.parent.mkdir()
    shutil.copy(FIXTURES / "1527675.json", later)
    frames = {}
    for flag in ("--form", "--no-form"):
        run(args(checkpoint, tmp_path / f"{flag}.parquet", later, sims=2, extra=(flag,)))
        frames[flag] = pd.read_parquet(tmp_path / f"{flag}.parquet")
    assert frames["--form"]["win_probability"].between(0, 1).all() and len(frames["--form"]) == len(frames["--no-form"])
    assert not frames["--form"]["projected_total"].equals(frames["--no-form"]["projected_total"])


def edited(folder, match_id, edit, name=None):
    doc = json.loads((FIXTURES / f"{match_id}.json").read_text())
    edit(doc)
    path = folder / f"{name or match_id}.json"
    path.write_text(json.dumps(doc))
    return path


def eleven_wickets(doc):
    """Every delivery of the first two overs of the chase a wicket: more than 10 in the innings."""
    for over in doc["innings"][1]["overs"][:2]:
        for d in over["deliveries"]:
            d["wickets"] = [{"kind": "bowled", "player_out": d["batter"]}]


def no_target(doc):
    doc["innings"][1].pop("target")


def test_bad_matches_are_skipped_and_named(checkpoint, tmp_path, capsys):
    bad = [edited(tmp_path, "1473438", eleven_wickets), edited(tmp_path, "1473440", no_target)]
    good = tmp_path / "1527675.json"
    shutil.copy(FIXTURES / "1527675.json", good)
    out = tmp_path / "out.csv"
    summary = run(args(checkpoint, out, good, *bad))
    assert summary.matches == 1 and len(summary.skipped) == 2
    reasons = " | ".join(summary.skipped)
    assert "match 1473438: innings 2: wicket_count" in reasons
    assert "match 1473440: innings 2: target_runs: a chase without a target" in reasons
    assert set(pd.read_csv(out)["match_id"].astype(str)) == {"1527675"}
    # --strict: exit status 2, one line, nothing written
    strict_out = tmp_path / "strict.csv"
    assert (
        main(
            [
                "--model",
                checkpoint,
                "--out",
                str(strict_out),
                "--sims",
                "2",
                "--history",
                str(FIXTURES),
                "--strict",
                "--no-mlflow",
                str(good),
                str(bad[0]),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "1473438" in err and not strict_out.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sims", "0"], "--sims 0: at least one simulation"),
        (["--out-name", "x.txt"], "must end in .parquet or .csv"),
        (["--players-out", "p.txt"], "--players-out p.txt: the file name must end in .parquet or .csv"),
        (["--players-out", "p.csv", "--fantasy", "dream"], "--fantasy dream: no "),
        (["--players-out", "p.csv", "--draws-out", "p.csv"], "--draws-out p.csv: the same file as --players-out"),
        (["--draws-out", "d.json"], "--draws-out d.json: the file name must end in .parquet or .csv"),
    ],
)
def test_bad_arguments_exit_2_in_one_line(checkpoint, tmp_path, capsys, argv, message):
    out = tmp_path / ("x.txt" if "--out-name" in argv else "x.csv")
    extra = [a for a in argv if a not in ("--out-name", "x.txt")]
    assert main(["--model", checkpoint, "--out", str(out), "--no-mlflow", *extra, str(FIXTURES / "1527675.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0 and not out.exists()


def test_a_format_without_a_known_quota_is_skipped_and_named(checkpoint, tmp_path):
    def test_match(doc):
        doc["info"]["match_type"] = "Test"

    path = edited(tmp_path, "1527675", test_match)
    good = tmp_path / "1527674.json"
    shutil.copy(FIXTURES / "1527674.json", good)
    summary = run(args(checkpoint, tmp_path / "out.parquet", good, path))
    assert summary.matches == 1
    assert any("1527675" in s and "match_type 'Test'" in s for s in summary.skipped)


def test_the_hundred_is_named_and_not_simulated_and_a_t20i_is(checkpoint, tmp_path):
    """Sets of five balls follow other laws (ten balls in a row for a bowler, ends every ten balls): The
    Hundred's match is named and left out; a T20 international, a competition the model never saw, is played."""
    leagues = FIXTURES.parent / "cricsheet_t20"
    for name in ("1417822", "1479576"):
        shutil.copy(leagues / f"{name}.json", tmp_path / f"{name}.json")
    summary = run(args(checkpoint, tmp_path / "out.parquet", tmp_path / "1417822.json", tmp_path / "1479576.json"))
    assert summary.matches == 1 and summary.unknown["competitions"] == ["T20I between full members"]
    unknown = "competition 'T20I between full members': unknown to the model (no ball of it before the day); matches: 1"
    assert f"{unknown} (1479576)" in summary.notes  # the field and its match, one line
    (reason,) = summary.skipped
    assert reason.startswith("match 1417822: sets of five balls (The Hundred") and "cricket-attn-predict" in reason
    projected = pd.read_parquet(tmp_path / "out.parquet")
    assert set(projected["match_id"].astype(str)) == {"1479576"}


def test_next_over_bowlers_and_next_batters_are_printed_for_a_live_match(checkpoint, tmp_path, capsys):
    live = live_copy(tmp_path)
    assert (
        main(
            [
                "--model",
                checkpoint,
                "--out",
                str(tmp_path / "o.csv"),
                "--sims",
                "4",
                "--history",
                str(FIXTURES),
                "--next-over-bowlers",
                "--next-batters",
                "--no-mlflow",
                str(live),
                str(FIXTURES / "1527675.json"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert printed.count(f"match {LIVE_MATCH}_live:") == 2
    assert "who bowls over 14?" in printed and "who comes in next?" in printed
    assert "match 1527675:" not in printed  # a finished match has no next over
    assert printed.count("win_probability_se") == 2


def test_the_spread_is_zero_or_more(capsys):
    from cricket_attn.simulation.rollout import SPREAD

    assert parse_args(["--model", "m.ckpt", "--out", "o.csv", "x.json"]).spread == SPREAD
    assert parse_args(["--model", "m.ckpt", "--out", "o.csv", "--spread", "0", "x.json"]).spread == 0.0
    with pytest.raises(SystemExit):
        parse_args(["--model", "m.ckpt", "--out", "o.csv", "--spread", "-0.1", "x.json"])
    assert "--spread: -0.1: must be 0 (off) or a positive number up to 1" in capsys.readouterr().err


def test_simulations_that_would_not_fit_in_memory_are_refused_before_the_model_runs(
    checkpoint, tmp_path, capsys, monkeypatch
):
    """--sims 1e9 asked for 160 GB (a traceback): one line naming the estimate and the most this machine takes."""
    from cricket_attn.commands import simulate

    monkeypatch.setattr(simulate.Simulator, "build", lambda *a, **k: pytest.fail("the simulator was built"))
    out = tmp_path / "out.csv"
    argv = ["--model", checkpoint, "--out", str(out), "--recent-level", "0", "--no-mlflow"]
    argv.append(str(FIXTURES / "1473438.json"))
    assert main([*argv, "--sims", "1000000000"]) == 2
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(
        r"cricket-attn-simulate: --sims 1,000,000,000: would need about [\d.]+ TiB of memory, more than the "
        r"[\d.]+ GiB free here; at most [\d,]+ on this machine now",
        err,
    )
    most = int(err.rsplit("at most ", 1)[1].split()[0].replace(",", ""))
    assert 1_000 < most < 1_000_000_000 and not out.exists()


def test_a_player_named_without_a_registry_id_is_one_player_here_too(checkpoint, tmp_path, capsys):
    """The rule of predict and players (`with_registry_ids`): the match file without its registry, simulated
    beside the fixtures' records; the summary says what was done."""
    doc = json.loads((FIXTURES / "1473438.json").read_text())
    del doc["info"]["registry"]
    (tmp_path / "1473438.json").write_text(json.dumps(doc))
    argv = ["--model", checkpoint, "--out", str(tmp_path / "out.csv"), "--sims", "2", "--recent-level", "0"]
    argv.append("--no-mlflow")
    assert main([*argv, "--history", str(FIXTURES), str(tmp_path / "1473438.json")]) == 0
    assert "note:               registry ids by name: " in capsys.readouterr().out


def test_plots_at_an_existing_file_are_refused_before_any_work(checkpoint, tmp_path, capsys):
    (tmp_path / "plots").write_text("a file, not a folder")
    out = tmp_path / "out.csv"
    argv = [
        "--model",
        checkpoint,
        "--out",
        str(out),
        "--plots",
        str(tmp_path / "plots"),
        "--no-mlflow",
        str(FIXTURES / "1527675.json"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cricket-attn-simulate: --plots {tmp_path / 'plots'}: is a file; give a folder (made if missing)"]
    assert not out.exists()


def test_a_full_disk_while_plotting_is_one_line(checkpoint, tmp_path, capsys, monkeypatch):
    def full_disk(projections, deliveries, folder):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / "x-worm.png"))

    monkeypatch.setattr("cricket_attn.commands.simulate.plot_match", full_disk)
    plots = tmp_path / "plots"
    assert (
        main([*args_list(checkpoint, tmp_path / "out.csv"), "--plots", str(plots), str(FIXTURES / "1527675.json")]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cricket-attn-simulate: --plots {plots}: cannot write (No space left on device)"]


def test_broken_zips_beside_a_good_match_are_named_and_the_rest_simulated(checkpoint, tmp_path, capsys, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    bad = broken_zips(src, monkeypatch)
    out = tmp_path / "out.parquet"
    assert main([*args_list(checkpoint, out, sims=2), str(src)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert set(pd.read_parquet(out)["match_id"]) == {GOOD, UPPER}
    assert f"skipped:            {len(bad)}" in lines
    assert all(sum(name in line for line in lines) == 1 for name in bad)  # each named, in one line


def test_nothing_to_simulate_says_what_was_there(checkpoint, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("not a match")
    assert main([*args_list(checkpoint, tmp_path / "out.csv"), str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(": found 1 file (1 .txt)") and "nothing to simulate in" in err[0]


def test_a_match_before_its_first_ball_is_projected_for_each_side_that_may_bat_first(checkpoint, tmp_path):
    """Two files of the info alone (the XIs, the venue, the date), one with its toss and one without, beside a
    finished match: the state before the first ball of each, its lines, and the refusals named."""

    def ahead(doc):  # the file as written before the match: no innings, no result
        doc.pop("innings"), doc["info"].pop("outcome")

    no_toss = edited(tmp_path, "1473439", lambda doc: (ahead(doc), doc["info"].pop("toss")))
    tossed = edited(tmp_path, "1082591", ahead)
    short = edited(tmp_path, "1178424", lambda doc: (ahead(doc), doc["info"].pop("venue")))
    abandoned = edited(tmp_path, "1178424", lambda doc: doc.pop("innings"), "abandoned")  # its result recorded
    out, players, plots = tmp_path / "out.csv", tmp_path / "players.csv", tmp_path / "plots"
    draws = tmp_path / "draws.parquet"
    extra = ("--players-out", str(players), "--plots", str(plots), "--draws-out", str(draws))
    summary = run(args(checkpoint, out, no_toss, tossed, short, abandoned, extra=extra))
    frame = pd.read_csv(out, dtype={"match_id": str})
    assert summary.matches == 2 and len(frame) == 3 and (frame["delivery_index"] == 0).all()
    assert frame.groupby("match_id")["order_weight"].sum().tolist() == [1.0, 1.0]
    assert sorted(frame.loc[frame["match_id"] == "1473439", "order_weight"]) == [0.5, 0.5]
    assert any("match 1178424: info.venue: no venue" in reason for reason in summary.skipped)
    assert frame["chase_projected_total"].notna().all() and frame["bowling_team"].notna().all()
    lines = pd.read_csv(players, dtype={"match_id": str})
    assert set(lines["match_id"]) == {"1473439", "1082591"} and lines["fantasy_mean"].notna().all()
    assert not lines.duplicated(["match_id", "team", "player"]).any()  # before the toss too: one line a player
    chances = [c for c in summary.counts() if c.startswith("before the first ball")]  # each side's, printed
    assert len(chances) == 2 and all(c.count("%") == 3 for c in chances)
    drawn = sorted(p.name for p in plots.iterdir())  # each match's chance and its players' lines
    assert drawn == [f"{m}-{kind}.png" for m in ("1082591", "1473439") for kind in ("before", "players")]
    # --draws-out: every listed player in each of the match's 4 simulations, both orders' numbered through;
    # a line is his draws summed up.
    every = pd.read_parquet(draws)
    assert list(every.columns) == list(DRAW_COLUMNS) and set(every["match_id"]) == {"1473439", "1082591"}
    per_player = every.groupby(["match_id", "team", "player"])["sim"].apply(sorted)
    assert all(sims == [0, 1, 2, 3] for sims in per_player) and len(per_player) == len(lines)
    assert every.loc[every["match_id"] == "1473439", "batting_first"].nunique() == 2  # the toss not known
    assert every.loc[every["match_id"] == "1082591", "batting_first"].nunique() == 1
    means = every.groupby(["match_id", "team", "player"])[["fantasy", "runs", "wickets"]].mean()
    mine = lines.set_index(["match_id", "team", "player"]).loc[means.index]
    np.testing.assert_allclose(mine[["fantasy_mean", "runs_mean", "wickets_mean"]], means, rtol=1e-9)
    assert summary.player_draws.startswith(f"{len(every):,} ")


def test_a_match_written_on_the_command_line_is_its_file_written_before_the_match(checkpoint, tmp_path, capsys):
    """`--teams`, `--xi` twice, `--venue`, `--city`, `--date`, `--toss`: 1082591 as its file would be written
    before the first ball (no innings, no result, no registry: its players known by the one id their names
    have in the data), and the same projections and lines as from that file with its registry (each listed
    player known as himself, not as a stranger by name); what the form lacks is one line."""
    info = json.loads((FIXTURES / "1082591.json").read_text())["info"]

    def ahead(doc):  # the file written before the match: the info, without the result
        doc.pop("innings"), doc["info"].pop("outcome")

    written = edited(tmp_path, "1082591", ahead)
    teams = info["teams"]
    form = [
        "--teams", *teams,
        "--xi", ", ".join(info["players"][teams[0]]),
        "--xi", ",".join(info["players"][teams[1]]),
        "--venue", info["venue"], "--city", info["city"], "--date", info["dates"][0],
        "--toss", info["toss"]["winner"], info["toss"]["decision"],
        "--event", info["event"]["name"], "--match-id", "1082591",
    ]  # fmt: skip
    from_file, from_form = tmp_path / "file.csv", tmp_path / "form.csv"
    run(args(checkpoint, from_file, written, extra=("--players-out", str(tmp_path / "file_players.csv"))))
    summary = run(args(checkpoint, from_form, extra=(*form, "--players-out", str(tmp_path / "form_players.csv"))))
    filled = "registry ids by name: 21 listed players a file named without an id"  # of 22: a debutant has no ball
    assert summary.matches == 1 and filled in summary.notes
    pd.testing.assert_frame_equal(pd.read_csv(from_form), pd.read_csv(from_file))
    lines = [pd.read_csv(tmp_path / f"{kind}_players.csv") for kind in ("form", "file")]
    pd.testing.assert_frame_equal(*lines)
    assert len(pd.read_csv(from_form)) == 1  # the toss known: the side that chose, batting first
    assert "Zz Newcomer" not in str(summary.unknown)
    newcomer = [*form[:3], "--xi", ",".join([*info["players"][teams[0]][:-1], "Zz Newcomer"]), *form[5:]]
    unknown = run(args(checkpoint, tmp_path / "new.csv", extra=newcomer)).unknown  # an XI's debutant, named
    assert "Zz Newcomer" in unknown["batters"] and "Zz Newcomer" in unknown["bowlers"]
    ground = ["Nowhere Oval" if x == info["venue"] else x for x in form]  # a new ground: simulated, said
    notes = run(args(checkpoint, tmp_path / "ground.csv", extra=ground)).notes
    assert [n for n in notes if "info.venue" in n] == [
        "info.venue 'Nowhere Oval': unknown to the model (no ball of it before the day); matches: 1 (1082591)"
    ]
    capsys.readouterr()
    xi = info["players"][teams[0]]
    for wrong, message in (
        (["--venue", "Eden Gardens"], "--venue describes a match written on the command line: give --teams too"),
        (form[:3], "--teams: give each side's players with --xi, twice (in --teams' order), and --venue"),
        (["--teams", teams[0], teams[0], *form[3:]], f"--teams '{teams[0]}' '{teams[0]}': two different sides"),
        ([*form[:-7], "--toss", teams[0], "bowl"], f"--toss '{teams[0]}' 'bowl': one of --teams, then bat or field"),
        ([*form[:-7], "--toss", "Eden", "bat"], "--toss 'Eden' 'bat': one of --teams, then bat or field"),
        ([*form[:3], "--xi", ",".join(xi) + ",", *form[5:]], f"--xi of {teams[0]}: an empty name (two commas"),
        (
            [*form[:3], "--xi", ",".join(xi[:10]), *form[5:]],
            f"match 1082591: info.players.{teams[0]}: 10 players (11, or 12 with an impact player)",
        ),
        ([*form, str(FIXTURES / "1082591.json")], "--match-id 1082591: a match of the sources has that id"),
        (
            ["2001-04-18" if x == info["dates"][0] else x for x in form],
            "nothing simulated: match 1082591: info.dates: 2001-04-18 is before the data's first match (2008-",
        ),
        ([], "give match files (zips, folders, cricsheet: names) or a match: --teams, --xi, --venue"),
    ):
        assert main([*args_list(checkpoint, tmp_path / "x.csv"), *wrong]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"cricket-attn-simulate: {message}") and "\n" not in err, err


@pytest.mark.parametrize("table", ["projections", "players"])
def test_a_probability_that_is_not_a_number_is_refused_and_the_old_output_kept(
    checkpoint, tmp_path, capsys, monkeypatch, table
):
    """What an overflow in a setting did (issue 53): a win probability or a player's chance that is not a
    number is one line naming the match, before either file is written; the previous output stays."""
    from cricket_attn.commands import simulate

    real = {"projections": simulate.project_match, "players": simulate.line_table}[table]

    def one_nan(*args, **kwargs):
        out = real(*args, **kwargs)
        if table == "projections":
            out[0].loc[out[0].index[0], "win_probability"] = float("nan")
        else:
            out.loc[out.index[0], "p_50"] = float("nan")
        return out

    monkeypatch.setattr(simulate, {"projections": "project_match", "players": "line_table"}[table], one_nan)
    out, players = tmp_path / "out.csv", tmp_path / "players.csv"
    out.write_text("previous results")
    argv = ["--model", checkpoint, "--out", str(out), "--players-out", str(players), "--sims", "2", "--no-mlflow"]
    assert main([*argv, "--recent-level", "0", str(FIXTURES / "1473438.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "have probabilities that are not numbers in [0, 1]" in err[0] and "1473438" in err[0]
    assert out.read_text() == "previous results" and not players.exists()


def test_a_simulation_is_an_mlflow_run_with_its_tables_and_pictures(checkpoint, tmp_path, capsys, monkeypatch):
    """Without --no-mlflow: one run of family "simulate" in the store given, the summary (each side's chance
    before the first ball) as its description, the projections, the players' lines and the pictures as
    artifacts; a store that cannot be used is one line before any work."""
    from mlflow.tracking import MlflowClient

    from tests.conftest import empty_store

    match = edited(tmp_path, "1473439", lambda doc: (doc.pop("innings"), doc["info"].pop("outcome")))
    uri, out, players = empty_store(tmp_path), tmp_path / "out.csv", tmp_path / "players.parquet"
    argv = ["--model", checkpoint, "--out", str(out), "--sims", "4", "--history", str(FIXTURES), "--tracking-uri", uri]
    extra = ["--players-out", str(players), "--plots", str(tmp_path / "plots"), str(match)]
    assert main([*argv, *extra]) == 0, capsys.readouterr().err
    client = MlflowClient(uri)
    (found,) = client.search_runs([client.get_experiment_by_name("cricket_attn").experiment_id])
    assert found.data.tags["model_family"] == "simulate" and found.data.metrics["simulate/matches"] == 1
    assert "before the first ball, match 1473439:" in found.data.tags["mlflow.note.content"]
    logged = {a.path for a in client.list_artifacts(found.info.run_id)}
    assert logged == {"out.csv", "players.parquet", "pictures"}
    pictures = {a.path for a in client.list_artifacts(found.info.run_id, "pictures")}
    assert pictures == {"pictures/1473439-before.png", "pictures/1473439-players.png"}
    assert f"MLflow run:         {found.info.run_id}" in capsys.readouterr().out
    (tmp_path / "store").write_text("a file, not a folder")
    bad = f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    assert main(["--model", checkpoint, "--out", str(tmp_path / "x.csv"), "--tracking-uri", bad, str(match)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1 and not (tmp_path / "x.csv").exists()

    def refused(*args, **kwargs):  # the store fails after the files are written
        raise OSError("disk full")

    monkeypatch.setattr("cricket_attn.commands.simulate.tracking.log_report_run", refused)
    assert main([*argv[:2], "--out", str(tmp_path / "y.csv"), *argv[4:], str(match)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cricket-attn-simulate: {tmp_path / 'y.csv'} written; its MLflow run failed: OSError: disk full"]
    assert (tmp_path / "y.csv").is_file()
