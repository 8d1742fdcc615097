"""cricket-attn-predict on real matches: valid probabilities, the next ball of an innings in
progress, strike rotation, unknown players, bad files and models, and agreement with the other routes."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import torch

from cricket_attn.commands.predict import OUTPUT_COLUMNS, main, parse_args, run
from cricket_attn.data.deliveries import plain_types
from cricket_attn.data.features import entity_key
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.reading import unknown_to
from cricket_attn.inference.serving import load_trained
from cricket_attn.metrics import PROB_COLUMNS
from tests.conftest import FIXTURES
from tests.data.test_sources import GOOD, UPPER, broken_zips

LIVE_MATCH = "1473440"  # a real 2025 match, cut off mid-over in the chase to make a live one


def live_copy(folder, keep_overs: int = 12, keep_balls: int = 3, rename: str | None = None):
    """The real match with its chase stopped after `keep_balls` balls of over `keep_overs`, no result."""
    doc = json.loads((FIXTURES / f"{LIVE_MATCH}.json").read_text())
    doc["info"].pop("outcome", None)
    chase = doc["innings"][1]
    chase["overs"] = chase["overs"][: keep_overs + 1]
    chase["overs"][-1]["deliveries"] = chase["overs"][-1]["deliveries"][:keep_balls]
    if rename:
        for over in chase["overs"]:
            for d in over["deliveries"]:
                if d["batter"] == chase["overs"][0]["deliveries"][0]["batter"]:
                    d["batter"] = rename
    path = folder / f"{LIVE_MATCH}_live.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def checkpoint(tracked_run):
    return tracked_run["results"]["checkpoint"]


@pytest.fixture(scope="module")
def predicted(checkpoint, tmp_path_factory):
    folder = tmp_path_factory.mktemp("predict")
    live = live_copy(folder, rename="A New Batter")
    out = folder / "scores.parquet"
    summary = run(parse_args(["--model", checkpoint, "--out", str(out), str(FIXTURES), str(live)]))
    return {"summary": summary, "frame": pd.read_parquet(out), "folder": folder, "live": live}


def test_output_columns_and_valid_probabilities(predicted, deliveries):
    frame = predicted["frame"]
    assert tuple(frame.columns) == OUTPUT_COLUMNS
    p = frame[list(PROB_COLUMNS)].to_numpy()
    assert (p >= 0).all() and np.abs(p.sum(axis=1) - 1).max() < 1e-6
    regular = int((~deliveries["is_super_over"]).sum())
    live_balls = 12 * 6 + 3  # at least; wides add more
    assert predicted["summary"].deliveries >= regular + live_balls
    assert frame["outcome"].notna().sum() == predicted["summary"].deliveries


def test_next_ball_row_of_the_live_innings_follows_the_laws(predicted):
    frame = predicted["frame"]
    nxt = frame[frame["outcome"].isna()]
    assert len(nxt) == 1 and nxt["match_id"].item() == f"{LIVE_MATCH}_live" and nxt["innings"].item() == 2
    # What really happened next, from the complete match.
    full = json.loads((FIXTURES / f"{LIVE_MATCH}.json").read_text())["innings"][1]["overs"][12]
    real_next = full["deliveries"][3]
    assert (nxt["over"].item(), nxt["ball_in_over"].item()) == (12, 4)
    assert nxt["bowler"].item() == real_next["bowler"]  # the bowler carries on within the over
    assert nxt["batter"].item() == real_next["batter"]
    live = frame[(frame["match_id"] == f"{LIVE_MATCH}_live") & (frame["innings"] == 2)]
    assert nxt["delivery_index"].item() == live["delivery_index"].max()


def test_next_ball_at_the_start_of_an_over_has_an_unknown_bowler(checkpoint, tmp_path):
    live = live_copy(tmp_path, keep_overs=9, keep_balls=6)
    out = tmp_path / "next.csv"
    run(parse_args(["--model", checkpoint, "--out", str(out), str(live)]))
    frame = pd.read_csv(out)
    nxt = frame[frame["outcome"].isna()]
    assert (nxt["over"].item(), nxt["ball_in_over"].item()) == (10, 1)
    assert pd.isna(nxt["bowler"].item())  # the unknown player has no name: an empty cell
    real = json.loads((FIXTURES / f"{LIVE_MATCH}.json").read_text())["innings"][1]["overs"][10]["deliveries"][0]
    assert nxt["batter"].item() == real["batter"]


def test_unknown_players_venues_and_competitions_are_counted_not_errors(checkpoint, deliveries, tmp_path):
    """The default model reads records as of the day: it knows nothing of whoever had no ball in the known
    matches (here the fixtures, `--history`) before his match's day (a debut), as a batter and as a bowler
    apart (a bowler's record says nothing of his batting), nor of the competition before its first match."""
    live, out = live_copy(tmp_path, rename="A New Batter"), tmp_path / "scores.parquet"
    summary = run(
        parse_args(["--model", checkpoint, "--out", str(out), "--history", str(FIXTURES), str(FIXTURES), str(live)])
    )
    frame = pd.read_parquet(out)
    assert "A New Batter" in summary.unknown["batters"] and (frame["batter"] == "A New Batter").any()
    regular = deliveries[~deliveries["is_super_over"]]

    def debuts(column: str) -> set[str]:
        first = regular["date"].groupby(entity_key(regular, column)).transform("min")
        return set(regular.loc[regular["date"] == first, column].astype(str))

    assert set(summary.unknown["batters"]) == debuts("batter") | {"A New Batter"}
    assert set(summary.unknown["bowlers"]) == debuts("bowler")
    assert set(summary.unknown["venues"]) == debuts("venue")
    assert summary.unknown["competitions"] == ["Indian Premier League"]  # the 2008 match: nothing before it
    assert "batters unknown to the model" in str(summary) and "competitions unknown to the model: 1" in str(summary)


def test_a_model_of_training_season_rates_knows_those_with_an_embedding(deliveries):
    """A model without records (data.records=null) knows a player by his embedding: one fitted on too few
    balls as a batter is an unknown batter, whatever he did as a bowler (registry ids, named by name)."""
    encoder = SequenceEncoder.fit_encode(deliveries[deliveries["season"] <= 2023], 5, competition_min_count=500)[0]
    unknown = unknown_to(encoder, deliveries)
    regular = deliveries[~deliveries["is_super_over"]]
    for what, column, vocab in (("batters", "batter", encoder.batters), ("bowlers", "bowler", encoder.bowlers)):
        keys = pd.Series(entity_key(regular, column))
        assert set(unknown[what]) == set(regular[column].astype(str)[~keys.isin(vocab.tokens[1:]).to_numpy()])
    known_bowlers = set(regular["bowler"].astype(str)) - set(unknown["bowlers"])
    assert set(unknown["batters"]) & known_bowlers  # the case the old, shared count missed
    assert unknown["competitions"] == [] and "venues" in unknown


def test_probabilities_equal_the_evaluation_route(checkpoint, deliveries, tmp_path):
    """On the same matches (a records model reads its records from the matches it is given), the command
    and `TrainedModel.score` agree ball by ball."""
    frame = predicted_with(checkpoint, tmp_path)
    scored = load_trained(checkpoint).score(deliveries)
    keys = ["match_id", "innings", "delivery_index"]
    both = frame.merge(scored[keys + list(PROB_COLUMNS)], on=keys, suffixes=("", "_eval"))
    assert len(both) == len(scored) == len(frame)
    for col in PROB_COLUMNS:
        assert np.abs(both[col] - both[f"{col}_eval"]).max() < 1e-6


def predicted_with(checkpoint: str, tmp_path: Path, *options: str) -> pd.DataFrame:
    """The fixture matches scored with `options`, the fixtures their earlier matches."""
    out = tmp_path / f"{'_'.join(options) or 'plain'}.parquet"
    run(parse_args(["--model", checkpoint, "--out", str(out), *options, "--history", str(FIXTURES), str(FIXTURES)]))
    return pd.read_parquet(out)


def test_the_recent_level_moves_each_match_by_the_matches_before_it(checkpoint, deliveries, tmp_path):
    """--recent-level: every match after the model's training seasons moved by offsets learnt from the
    matches before it, the same as scoring all and moving each by `recent_offsets`; the first of them, and
    every match of the training seasons, as they were."""
    from cricket_attn.inference.recent import recent_offsets, with_offsets

    moved, plain = (
        predicted_with(checkpoint, tmp_path, "--recent-level", level, "--no-form") for level in ("200", "0")
    )
    trained = load_trained(checkpoint)
    trained.encoder.attach_known(deliveries)  # what the command reads records from (its --history)
    seasons = deliveries.groupby("match_id")["season"].first()
    later = seasons[seasons > trained.encoder.trained_until]
    first_later = deliveries[deliveries["match_id"].isin(later.index)].groupby("match_id")["date"].first().idxmin()
    p = moved[list(PROB_COLUMNS)].to_numpy()
    assert np.abs(p.sum(axis=1) - 1).max() < 1e-6 and len(moved) == len(plain)
    changed = np.abs(p - plain[list(PROB_COLUMNS)].to_numpy()).max(axis=1) > 1e-9
    by_match = pd.Series(changed).groupby(moved["match_id"].astype(str).to_numpy()).any()
    assert not by_match[[m for m in seasons.index if m not in later.index]].any() and not by_match[first_later]
    assert by_match[[m for m in later.index if m != first_later]].all()
    levels = recent_offsets(trained.model, trained.encoder, deliveries, 200.0)
    expected = with_offsets(trained.score(deliveries), levels)
    keys = ["match_id", "innings", "delivery_index"]
    both = moved.merge(expected[keys + list(PROB_COLUMNS)], on=keys, suffixes=("", "_direct"))
    assert len(both) == len(expected)
    assert max(np.abs(both[c] - both[f"{c}_direct"]).max() for c in PROB_COLUMNS) < 1e-6


def test_players_form_tilts_each_match_by_the_matches_before_it(checkpoint, deliveries, tmp_path):
    """--form: each ball of a match after the training seasons tilted by its batter's and bowler's form in the
    matches before it, as `PlayerForm` gives it directly; the first of them and the training seasons' matches
    as they were."""
    from cricket_attn.inference.form import PlayerForm
    from cricket_attn.inference.recent import balls_since

    tilted, plain = (
        predicted_with(checkpoint, tmp_path, "--recent-level", "0", flag) for flag in ("--form", "--no-form")
    )
    trained = load_trained(checkpoint)
    trained.encoder.attach_known(deliveries)  # what the command reads records from (its --history)
    seasons = deliveries.groupby("match_id")["season"].first()
    later = seasons[seasons > trained.encoder.trained_until]
    dates = deliveries.groupby("match_id")["date"].first()
    first_later = dates[later.index].idxmin()
    changed = np.abs(tilted[list(PROB_COLUMNS)].to_numpy() - plain[list(PROB_COLUMNS)].to_numpy()).max(axis=1) > 1e-9
    by_match = pd.Series(changed).groupby(tilted["match_id"].astype(str).to_numpy()).any()
    assert not by_match[[m for m in seasons.index if m not in later.index]].any() and not by_match[first_later]
    assert by_match[list(later.index)].any()  # (a match whose players played none before it stays as it was)
    balls, match_dates = balls_since(trained.model, trained.encoder, deliveries)
    scored = trained.score(deliveries)
    expected = PlayerForm.from_scored(balls, match_dates).tilt(scored, dates)
    keys = ["match_id", "innings", "delivery_index"]
    both = tilted.merge(expected[keys + list(PROB_COLUMNS)], on=keys, suffixes=("", "_direct"))
    assert len(both) == len(expected)
    assert max(np.abs(both[c] - both[f"{c}_direct"]).max() for c in PROB_COLUMNS) < 1e-6


def test_csv_and_parquet_agree(checkpoint, predicted, tmp_path):
    out = tmp_path / "scores.csv"
    run(parse_args(["--model", checkpoint, "--out", str(out), str(FIXTURES), str(predicted["live"])]))
    csv = pd.read_csv(out, dtype={"match_id": str})
    parquet = predicted["frame"]
    assert list(csv.columns) == list(parquet.columns) and len(csv) == len(parquet)
    assert np.abs(csv[list(PROB_COLUMNS)].to_numpy() - parquet[list(PROB_COLUMNS)].to_numpy()).max() < 1e-8
    assert (csv["batter"] == parquet["batter"]).all()


def test_pyfunc_model_gives_the_scripts_columns_and_numbers(tracked_run, checkpoint, deliveries, tmp_path):
    mlflow.set_tracking_uri(tracked_run["uri"])
    model = mlflow.pyfunc.load_model(f"runs:/{tracked_run['run_id']}/model")
    out = model.predict(plain_types(deliveries))
    assert set(OUTPUT_COLUMNS) <= set(out.columns)
    keys = ["match_id", "innings", "delivery_index"]
    both = predicted_with(checkpoint, tmp_path).merge(out[keys + list(PROB_COLUMNS)], on=keys, suffixes=("", "_pyfunc"))
    assert len(both) == len(out)
    assert max(np.abs(both[c] - both[f"{c}_pyfunc"]).max() for c in PROB_COLUMNS) < 1e-6


def test_a_player_named_without_a_registry_id_is_the_one_player_his_name_is_elsewhere(
    fixture_tables, checkpoint, tmp_path, capsys
):
    """A match file without `info.registry` keyed "Q de Kock" by name beside his registry id from the other
    matches (two rows for one player, his balls halved): where the name has one id in the data it takes it,
    and the summary says so; a name with two ids stays by name."""
    from cricket_attn.data.features import with_registry_ids

    d = fixture_tables.deliveries
    match = d["match_id"].astype(str) == "1473438"
    blank = d.copy()
    for role in ("batter", "bowler", "non_striker"):
        blank[f"{role}_id"] = blank[f"{role}_id"].astype(object).where(~match, None).astype("category")
    filled, notes = with_registry_ids(blank)
    players = pd.unique(d.loc[match, ["batter", "bowler", "non_striker"]].to_numpy().ravel())
    elsewhere = {p for p in players if (d.loc[~match, ["batter", "bowler", "non_striker"]] == p).any().any()}
    assert elsewhere  # the test means something: some of the match's players played other fixture matches
    for role in ("batter", "bowler", "non_striker"):
        again = d.loc[match, role].astype(str).isin(elsewhere).to_numpy()
        got = filled.loc[match, f"{role}_id"].astype(object).to_numpy()
        assert (got[again] == d.loc[match, f"{role}_id"].astype(object).to_numpy()[again]).all()
        assert pd.isna(got[~again]).all()  # a name seen nowhere else keeps no id
    assert len(notes) == 1 and notes[0].startswith("registry ids by name: ")
    twice = blank.copy()  # the same name under two ids elsewhere: ambiguous, kept by name
    name = d.loc[match & d["batter"].astype(str).isin(elsewhere), "batter"].astype(str).iloc[0]
    other = twice.index[~match & (twice["batter"].astype(str) == name)][0]
    twice["batter_id"] = twice["batter_id"].cat.add_categories(["someone-else"])
    twice.loc[other, "batter_id"] = "someone-else"
    filled, notes = with_registry_ids(twice)
    assert filled.loc[match & (d["batter"].astype(str) == name), "batter_id"].isna().all()
    assert f"{name}: several registry ids in the data; kept by name" in notes
    # The command: the file without its registry, scored beside the fixtures; the summary says what was done.
    doc = json.loads((FIXTURES / "1473438.json").read_text())
    del doc["info"]["registry"]
    (tmp_path / "1473438.json").write_text(json.dumps(doc))
    out = tmp_path / "scores.parquet"
    argv = ["--model", checkpoint, "--out", str(out), "--history", str(FIXTURES), str(tmp_path / "1473438.json")]
    assert main(argv) == 0
    assert "note:               registry ids by name: " in capsys.readouterr().out


def test_a_match_dated_after_today_is_scored_and_said(checkpoint, tmp_path, capsys):
    doc = json.loads((FIXTURES / "1473438.json").read_text())
    doc["info"]["dates"] = ["2031-04-02"]
    doc["info"]["season"] = "2031"
    (tmp_path / "1473438.json").write_text(json.dumps(doc))
    out = tmp_path / "scores.parquet"
    assert main(["--model", checkpoint, "--out", str(out), str(tmp_path / "1473438.json")]) == 0
    printed = capsys.readouterr().out
    assert (
        "note:               1 match(es) dated after today, worked on as dated (first: 1473438, 2031-04-02)" in printed
    )
    assert set(pd.read_parquet(out)["match_id"]) == {"1473438"}


def test_a_bad_file_is_skipped_and_strict_makes_it_fatal(checkpoint, tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("1473438.json", "1473439.json"):
        (folder / name).write_bytes((FIXTURES / name).read_bytes())
    bad = json.loads((FIXTURES / "1527674.json").read_text())
    bad["innings"][0]["overs"][2]["deliveries"][1]["runs"]["total"] = 99
    (folder / "1527674.json").write_text(json.dumps(bad))
    out = tmp_path / "scores.parquet"
    assert main(["--model", checkpoint, "--out", str(out), str(folder)]) == 0
    printed = capsys.readouterr().out
    assert "skipped:            1" in printed and "1527674" in printed and "runs" in printed
    assert set(pd.read_parquet(out)["match_id"]) == {"1473438", "1473439"}
    out.write_text("previous results")
    assert main(["--model", checkpoint, "--out", str(out), "--strict", str(folder)]) == 2
    assert out.read_text() == "previous results"  # replaced only on success
    assert "1527674" in capsys.readouterr().err


@pytest.mark.e2e  # the command, with an MLflow store
def test_a_missing_or_foreign_model_fails_before_reading_data(tmp_path, capsys):
    out = tmp_path / "scores.parquet"
    out.write_text("previous results")
    assert main(["--model", str(tmp_path / "nope.ckpt"), "--out", str(out), str(tmp_path / "no_such_source")]) == 2
    assert "nope.ckpt: no such checkpoint file" in capsys.readouterr().err
    foreign = tmp_path / "other.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(2)}}, foreign)
    assert main(["--model", str(foreign), "--out", str(out), str(tmp_path / "no_such_source")]) == 2
    err = capsys.readouterr().err
    assert "not a cricket_attn checkpoint" in err and len(err.strip().splitlines()) == 1
    assert (
        main(
            [
                "--model",
                "runs:/0123456789abcdef/model",
                "--out",
                str(out),
                "--tracking-uri",
                f"sqlite:///{tmp_path / 'mlflow.db'}",
                str(FIXTURES),
            ]
        )
        == 2
    )
    assert "no such MLflow model" in capsys.readouterr().err
    assert out.read_text() == "previous results"


def test_a_checkpoint_whose_encoder_lacks_a_field_names_it(checkpoint, tmp_path, capsys):
    ckpt = torch.load(checkpoint, map_location="cpu", weights_only=True)
    del ckpt["CricketDataModule"]["encoder"]["first_season"]  # as saved before season terms existed
    old = tmp_path / "old.ckpt"
    torch.save(ckpt, old)
    assert main(["--model", str(old), "--out", str(tmp_path / "scores.parquet"), str(FIXTURES)]) == 2
    err = capsys.readouterr().err
    assert "old.ckpt" in err and "first_season" in err and len(err.strip().splitlines()) == 1


def long_copy(folder, match_id: str = "1082591") -> tuple:
    """A real match whose first innings is played twice over (as long as a day of a Test): longer than the
    model's sequences."""
    doc = json.loads((FIXTURES / f"{match_id}.json").read_text())
    overs = doc["innings"][0]["overs"]
    doc["innings"][0]["overs"] = overs + [{**o, "over": o["over"] + len(overs)} for o in overs]
    path = folder / f"{match_id}.json"
    path.write_text(json.dumps(doc))
    return path, sum(len(o["deliveries"]) for o in doc["innings"][0]["overs"])


def test_a_match_longer_than_the_model_is_left_out_by_name_and_the_rest_scored(checkpoint, tmp_path, capsys):
    long, balls = long_copy(tmp_path)
    out = tmp_path / "scores.csv"
    assert main(["--model", checkpoint, "--out", str(out), str(long), str(FIXTURES / "1359475.json")]) == 0
    printed = capsys.readouterr().out
    assert (
        f"match 1082591: innings 1 reaches {balls} deliveries, more than the model's tables hold (model.max_len=160"
        in printed
    )
    assert set(pd.read_csv(out, dtype={"match_id": str})["match_id"]) == {"1359475"}
    assert (
        main(
            [
                "--model",
                checkpoint,
                "--out",
                str(tmp_path / "s.csv"),
                "--strict",
                str(long),
                str(FIXTURES / "1359475.json"),
            ]
        )
        == 2
    )
    assert "--strict: match 1082591: innings 1 reaches" in capsys.readouterr().err and not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize(
    "what, found",
    [
        (
            "an empty folder",
            "no Cricsheet match files (.json or .json.gz, alone, in a folder or in a zip): found no files",
        ),
        (
            "other files",
            "no Cricsheet match files (.json or .json.gz, alone, in a folder or in a zip): found 3 files (",
        ),
        ("only bad files", "1 file(s) skipped, first: "),
        (
            "a match without deliveries",
            "1 match(es) without deliveries (first: match 1178424, no ball bowled, its result recorded)",
        ),
        (
            "a match not begun",
            "1 match(es) without deliveries (first: match 1178424, a match not begun: cricket-attn-simulate projects",
        ),
    ],
)
def test_nothing_to_score_is_one_line_saying_what_was_there(checkpoint, tmp_path, capsys, what, found):
    src = tmp_path / "src"
    src.mkdir()
    if what == "other files":
        for name in ("a.txt", "b.txt", "scores.csv"):
            (src / name).write_text("not a match")
    elif what == "only bad files":
        (src / "1.json").write_text('{"meta": {"data_version": "1.1.0"}}')
    elif what in ("a match without deliveries", "a match not begun"):
        doc = json.loads((FIXTURES / "1178424.json").read_text())
        doc["innings"] = []
        if what == "a match not begun":  # its info alone, as written once the sides are named
            doc["info"].pop("outcome")
        (src / "1178424.json").write_text(json.dumps(doc))
    assert main(["--model", checkpoint, "--out", str(tmp_path / "s.csv"), str(src)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"cricket-attn-predict: nothing to score in {src}: {found}")
    if what == "other files":
        assert err[0].endswith("(2 .txt, 1 .csv)")


def test_an_output_that_cannot_be_written_is_one_line(checkpoint, tmp_path, capsys):
    (tmp_path / "folder.csv").mkdir()
    assert main(["--model", checkpoint, "--out", str(tmp_path / "folder.csv"), str(FIXTURES / "1359475.json")]) == 2
    assert "is a folder" in capsys.readouterr().err
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    assert (
        main(["--model", checkpoint, "--out", str(tmp_path / "notes.txt" / "s.csv"), str(FIXTURES / "1359475.json")])
        == 2
    )
    assert f"cannot write in {tmp_path / 'notes.txt'} (not a folder)" in capsys.readouterr().err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="Linux's /proc: a folder that takes no new file")
def test_a_folder_that_refuses_new_files_is_refused_before_the_model_is_read(tmp_path, capsys, monkeypatch):
    """/proc passes the permission check (root may write there) and takes no file: refused before any work."""
    from cricket_attn.commands import predict

    monkeypatch.setattr(predict, "load_trained", lambda *a: pytest.fail("the model was read"))
    assert main(["--model", "m.ckpt", "--out", "/proc/scores.csv", str(FIXTURES / "1359475.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cricket-attn-predict: --out /proc/scores.csv: cannot write in /proc (") and "\n" not in err


def test_ctrl_c_and_probabilities_that_are_not_numbers_leave_the_old_output_in_one_line(
    checkpoint, tmp_path, capsys, monkeypatch
):
    from cricket_attn.commands import predict

    out = tmp_path / "scores.csv"
    out.write_text("previous results")
    argv = ["--model", checkpoint, "--out", str(out), str(FIXTURES / "1359475.json")]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(predict, "predict_tables", interrupted)
        assert main(argv) == 130
    assert capsys.readouterr().err == "cricket-attn-predict: interrupted; nothing half written\n"
    real = predict.predict_tables

    def one_nan(*args, **kwargs):  # what an overflow in a setting did: a probability that is not a number
        scored, left_out = real(*args, **kwargs)
        scored.loc[scored.index[5], PROB_COLUMNS[0]] = np.nan
        return scored, left_out

    monkeypatch.setattr(predict, "predict_tables", one_nan)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "1 rows have probabilities that are not numbers in [0, 1] summing to 1 (first: match 1359475)" in err
    assert out.read_text() == "previous results"


def test_broken_zips_beside_good_matches_are_named_and_the_rest_scored(checkpoint, tmp_path, capsys, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    bad = broken_zips(src, monkeypatch)
    out = tmp_path / "scores.parquet"
    assert main(["--model", checkpoint, "--out", str(out), str(src)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert set(pd.read_parquet(out)["match_id"]) == {GOOD, UPPER}
    assert f"skipped:            {len(bad)}" in lines
    assert all(sum(name in line for line in lines) == 1 for name in bad)  # each named, in one line


def test_cricsheet_names_are_read_and_a_second_different_copy_of_a_match_is_named(
    checkpoint, tmp_path, capsys, monkeypatch
):
    """`cricsheet:<name>` is a source here as in training (the local copy; nothing downloaded). Two sources
    holding different copies of one match id: the first is scored, the other named in the summary."""
    import zipfile

    from cricket_attn.data import sources

    copy = tmp_path / "copy"
    copy.mkdir()
    with zipfile.ZipFile(copy / "ipl_json.zip", "w") as z:
        z.write(FIXTURES / "1473438.json", "1473438.json")
    edited = json.loads((FIXTURES / "1473438.json").read_text())
    edited["info"]["venue"] = "Somewhere Else"
    other = tmp_path / "other"
    other.mkdir()
    (other / "1473438.json").write_text(json.dumps(edited))
    monkeypatch.setenv(sources.CRICSHEET_COPY_ENV, str(copy))
    monkeypatch.setattr(sources, "CRICSHEET_DOWNLOADS", "http://127.0.0.1:9/")  # never asked
    out = tmp_path / "scores.parquet"
    assert main(["--model", checkpoint, "--out", str(out), "cricsheet:ipl", str(other)]) == 0
    lines = capsys.readouterr().out.splitlines()
    scored = pd.read_parquet(out)
    assert set(scored["match_id"]) == {"1473438"}
    assert "skipped:            1" in lines
    named = [line for line in lines if str(other / "1473438.json") in line]
    assert len(named) == 1 and "content different from" in named[0] and str(copy / "ipl_json.zip") in named[0]


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_full_disk_is_one_line_and_leaves_nothing(checkpoint, tmp_path, capsys, monkeypatch, suffix):
    def filling(self, path, *args, **kwargs):  # half the table written, then no more room
        Path(path).write_text("match_id,innings\n1082591,")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(pd.DataFrame, "to_parquet" if suffix == ".parquet" else "to_csv", filling)
    out = tmp_path / "out" / f"scores{suffix}"
    assert main(["--model", checkpoint, "--out", str(out), str(FIXTURES / "1359475.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cricket-attn-predict: --out {out}: cannot write (No space left on device)"]
    assert not list(out.parent.iterdir())  # atomic: no half a table, no temporary file


def test_a_model_that_is_a_folder_is_called_one(tmp_path, capsys):
    out = tmp_path / "scores.csv"
    assert main(["--model", str(tmp_path), "--out", str(out), str(FIXTURES / "1359475.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"cricket-attn-predict: {tmp_path}: is a folder, not a checkpoint file (a .ckpt; or an MLflow model URI)"
    ]


@pytest.mark.e2e  # trains a run
def test_a_model_reading_histories_takes_them_from_the_history_data(tmp_path, capsys):
    """With --history, a match is scored with its players' earlier balls from that data, exactly as
    when every match is known at once; with only the match itself, its players have no history. Without
    --history, from the data the model was trained on, which its checkpoint names."""
    from cricket_attn.config import load_data_config
    from cricket_attn.data.deliveries import PhaseRules, build_tables
    from cricket_attn.data.sources import iter_match_files
    from cricket_attn.training.train import train
    from tests.conftest import tiny_train_config

    results = train(tiny_train_config(tmp_path, "data.history_balls=8", "~logger", "refit=false", "calibrate=false"))
    match = FIXTURES / "1527675.json"  # 2026: its players have balls in the earlier fixture matches
    out = tmp_path / "scores.csv"
    assert main(["--model", results["checkpoint"], "--out", str(out), "--history", str(FIXTURES), str(match)]) == 0
    with_history = pd.read_csv(out)
    trained = load_trained(results["checkpoint"])
    everything = build_tables(iter_match_files([FIXTURES]), PhaseRules.from_config(load_data_config("ipl").phases))
    trained.encoder.attach_known(everything.deliveries)
    d = everything.deliveries
    expected = trained.score(d[d["match_id"] == "1527675"])
    assert np.allclose(
        with_history[list(PROB_COLUMNS)].to_numpy()[: len(expected)], expected[list(PROB_COLUMNS)].to_numpy(), atol=1e-6
    )
    assert main(["--model", results["checkpoint"], "--out", str(out), "--history", str(match), str(match)]) == 0
    alone = pd.read_csv(out)
    # (the tiny model's histories move its probabilities a little, but they move them)
    assert np.abs(alone[list(PROB_COLUMNS)].to_numpy() - with_history[list(PROB_COLUMNS)].to_numpy()).max() > 1e-6
    assert trained.encoder.sources == [str(FIXTURES)]
    capsys.readouterr()
    assert main(["--model", results["checkpoint"], "--out", str(out), str(match)]) == 0
    assert f"earlier matches:    {FIXTURES} (the model's training data)" in capsys.readouterr().out
    assert pd.read_csv(out).equals(with_history)


def renamed_match(phases, names: dict[str, str]) -> pd.DataFrame:
    """The deliveries of real match 1082591 with its players renamed (`names`: real name to new name)."""
    from cricket_attn.data.deliveries import build_tables
    from cricket_attn.data.sources import MatchFile
    from tests.conftest import match_file

    raw = match_file("1082591").raw
    for real, new in names.items():
        raw = raw.replace(json.dumps(real).encode(), json.dumps(new).encode())
    return build_tables([MatchFile("1082591.json", "1082591", raw)], phases).deliveries


def test_a_player_named_like_the_old_unknown_token_is_an_unknown_player_to_a_model_without_him(deliveries, phases):
    from cricket_attn.data.sequences import SequenceEncoder
    from cricket_attn.inference.reading import unknown_to

    encoder = SequenceEncoder.fit(deliveries, min_count=5)
    # Renamed, and under a registry id no file has: a player the model has never seen.
    unknown = unknown_to(encoder, renamed_match(phases, {"MC Henriques": "<unk>", "32198ae0": "00000000"}))
    assert "<unk>" in unknown["batters"] and "<unk>" in unknown["bowlers"]


def test_formula_like_names_are_defused_in_csv_and_kept_in_parquet(tmp_path, phases):
    """Players named like spreadsheet formulas: a single quote before each in CSV (OWASP's advice against
    CSV injection), the names as they are in parquet; numbers, negative ones too, untouched."""
    from cricket_attn.cli import write_table

    names = {
        "MC Henriques": '=HYPERLINK("http://x","y")',
        "S Dhawan": "+1",
        "Yuvraj Singh": "-2",
        "CH Gayle": "@SUM(A1)",
    }
    d = renamed_match(phases, names)
    table = d[["match_id", "batter", "bowler", "runs_total"]].astype({"batter": str, "bowler": str})
    table["runs_total"] -= 1  # -1 for a dot ball: a negative number stays a number
    write_table(table, tmp_path / "t.parquet")
    write_table(table, tmp_path / "t.csv")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), table)
    csv = pd.read_csv(tmp_path / "t.csv", dtype={"match_id": str})
    for col in ("batter", "bowler"):
        formula = table[col].isin(names.values())
        assert formula.any() and (~formula).any()
        assert (csv[col] == table[col].where(~formula, "'" + table[col])).all()  # other names as they are
    assert (csv["runs_total"] == table["runs_total"]).all() and (table["runs_total"] < 0).any()
