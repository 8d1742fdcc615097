"""`cricket-attn-players` end to end on the fixture matches with the tiny trained run: its table, pictures
and MLflow run; what it refuses, in one line."""

from __future__ import annotations

import json
from argparse import Namespace

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from cricket_attn.commands.players import main, player_keys
from tests.conftest import FIXTURES
from tests.inference.test_serving import long_over, short_odi
from tests.valuation.test_expected import tiny_model


def test_the_command_writes_the_table_the_pictures_and_a_run(tracked_run, tmp_path, capsys):
    out, plots, uri = tmp_path / "players.csv", tmp_path / "pictures", f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = main(
        ["--model", tracked_run["results"]["checkpoint"], "--out", str(out), "--plots", str(plots),
         "--player", "RA Jadeja", "--card", "RA Jadeja", "--min-balls", "20", "--boot", "100", "--tracking-uri", uri,
         "--reliability", "--min-balls-reliability", "20", str(FIXTURES)]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    table = pd.read_csv(out)
    assert set(table["role"]) == {"batting", "bowling"} and set(table["player"]) == {"RA Jadeja"}
    assert {
        "runs_above_expected",
        "runs_above_expected_low",
        "runs_saved_high",
        "wickets_above_expected",
        "rank",
    } <= set(table.columns)
    assert (plots / "card_RA-Jadeja.png").is_file() and list(plots.glob("leaders_*.png"))
    assert "near zero if the model is calibrated" in printed.out and "leaders of" in printed.out
    (run,) = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("cricket_attn").experiment_id])
    assert run.data.tags["model_family"] == "players" and run.info.status == "FINISHED"
    artifacts = {a.path for a in MlflowClient(uri).list_artifacts(run.info.run_id)}
    assert {"players.csv", "players_reliability.md", "pictures"} <= artifacts
    reliability = (tmp_path / "players_reliability.md").read_text()
    assert "| batting | runs_above_expected | 2023-2024 |" in reliability
    assert "| bowling | runs_value | 2025 |" in reliability
    assert "Which predicts next season's value better" in reliability and "raw_next_value_r" in reliability
    assert abs(run.data.metrics["players/runs_above_expected_per_ball"]) < 1


def test_a_player_asked_for_by_an_older_name_is_found_under_his_id(tracked_run, tmp_path, capsys):
    # registry id 21d4e29b bowled as "Navdeep Saini" in 2019 (6 legal balls) and as "NA Saini" in 2023 (12)
    out = tmp_path / "p.csv"
    code = main(
        ["--model", tracked_run["results"]["checkpoint"], "--out", str(out), "--player", "Navdeep Saini", "--by",
         "season", "--boot", "100", "--no-mlflow", str(FIXTURES)]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    table = pd.read_csv(out)
    bowling = table[table["role"] == "bowling"]
    assert set(table["player_id"]) == {"21d4e29b"} and set(bowling["season"]) == {2019, 2023}
    assert set(bowling["balls"]) == {6, 12}
    assert set(table["player"]) == {"Navdeep Saini", "NA Saini"}  # as written each season


def test_a_player_named_without_a_registry_id_is_one_player(tracked_run, tmp_path, capsys):
    """Issue 53's "Q de Kock" split in two: one fixture match written without its registry beside the others
    that have it; AD Russell is one player under his registry id, with every ball of his, and the summary
    says what was done."""
    import shutil

    folder = tmp_path / "matches"
    shutil.copytree(FIXTURES, folder)
    doc = json.loads((folder / "1473438.json").read_text())
    del doc["info"]["registry"]
    (folder / "1473438.json").write_text(json.dumps(doc))
    tables = {}
    for name, source in (("whole", FIXTURES), ("without", folder)):
        out = tmp_path / f"{name}.csv"
        argv = ["--model", tracked_run["results"]["checkpoint"], "--out", str(out), "--player", "AD Russell"]
        assert main([*argv, "--boot", "100", "--no-mlflow", str(source)]) == 0, capsys.readouterr().err
        tables[name] = pd.read_csv(out).set_index(["role", "season"])
        printed = capsys.readouterr().out
    assert "note: registry ids by name: " in printed
    assert set(tables["without"]["player_id"]) == {"bbd41817"}  # not a second player keyed by his name
    assert tables["without"]["balls"].to_dict() == tables["whole"]["balls"].to_dict()  # every ball of his


def test_a_name_is_one_player_unless_two_registry_ids_share_it(deliveries):
    trained = tiny_model(deliveries, "records")
    d = deliveries.copy()
    d["bowler_id"] = d["bowler_id"].astype(object)
    d.loc[d["match_id"].astype(str) == "1178424", "bowler_id"] = None  # his 2019 file without the registry
    keys = player_keys(trained, d, Namespace(player=["Navdeep Saini", "NA Saini", "21d4e29b"], card=None))
    assert keys["NA Saini"] == ["21d4e29b"] and keys["21d4e29b"] == ["21d4e29b"]
    assert keys["Navdeep Saini"] == ["21d4e29b", "Navdeep Saini"]  # his id-less bowling keyed by the name
    jadeja = d["bowler"].astype(str) == "RA Jadeja"
    d["bowler"] = d["bowler"].astype(object)
    d.loc[jadeja.to_numpy().nonzero()[0][:6], "bowler"] = "NA Saini"  # another player of the same name
    with pytest.raises(ValueError, match=r"^--player NA Saini: 2 players \(21d4e29b, .+\); ask for one of them$"):
        player_keys(trained, d, Namespace(player=["NA Saini"], card=None))


def test_a_match_the_model_cannot_take_is_named_and_the_others_valued(tracked_run, tmp_path, capsys):
    for name, doc in (
        ("1473439", json.loads((FIXTURES / "1473439.json").read_text())),
        ("odi", short_odi()),
        ("over14", long_over()),
    ):
        (tmp_path / "matches").mkdir(exist_ok=True)
        (tmp_path / "matches" / f"{name}.json").write_text(json.dumps(doc))
    out = tmp_path / "balls.parquet"
    code = main(
        ["--model", tracked_run["results"]["checkpoint"], "--out", str(tmp_path / "p.parquet"), "--balls-out",
         str(out), "--no-mlflow", "--history", str(FIXTURES), "--boot", "100", str(tmp_path / "matches")]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert set(pd.read_parquet(out)["match_id"].astype(str)) == {"1473439"}
    named = [line.strip() for line in printed.out.splitlines() if line.strip().startswith("match ")]
    assert len(named) == 2 and all(line.endswith("; not valued") for line in named)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--player", "Nobody At All"], "--player Nobody At All: no ball batted or bowled in the matches valued"),
        (["--season", "1999"], "--season 1999: no match in the data (seasons 2008-2026)"),
        (["--out", "players.txt"], "--out players.txt: the file name must end in .parquet or .csv"),
        (["--balls-out", "b.json"], "--balls-out b.json: the file name must end in .parquet or .csv"),
        (["--card", "RA Jadeja"], "--card RA Jadeja: a card needs --plots and the values by season (--by season ...)"),
        (["--plots", "pics", "--card", "Nobody"], "--card Nobody: no ball batted or bowled in the matches valued"),
        (["--balls-out", "p.csv"], "--balls-out p.csv: the same file as --out; give it a name of its own"),
        (["--top", "1000"], "argument --top: 1000: must be at most 100"),
        (
            ["--season", "2023", "--season", "2025", "--reliability"],
            "--reliability: needs two consecutive seasons among those valued (e.g. --season 2024 --season 2025)",
        ),
    ],
)
def test_a_refusal_is_one_line(tracked_run, tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    args = ["--model", tracked_run["results"]["checkpoint"], "--out", "p.csv", "--no-mlflow"]
    try:
        code = main([*args, *extra, str(FIXTURES)])
    except SystemExit as exit:  # argparse's own refusal
        code = exit.code
    assert code == 2
    err = capsys.readouterr().err
    assert err == f"cricket-attn-players: {message}\n"


def test_bad_files_are_named_and_the_good_matches_valued(tracked_run, tmp_path, capsys):
    folder = tmp_path / "matches"
    folder.mkdir()
    (folder / "1473439.json").write_text((FIXTURES / "1473439.json").read_text())
    (folder / "empty.json").write_text("")
    (folder / "notjson.json").write_text("{not json")
    args = ["--model", tracked_run["results"]["checkpoint"], "--out", str(tmp_path / "p.csv"), "--no-mlflow"]
    assert main([*args, "--history", str(FIXTURES), str(folder)]) == 0
    printed = capsys.readouterr().out
    assert "skipped: 2" in printed and "empty.json" in printed and "notjson.json" in printed
    empty = tmp_path / "nothing"
    empty.mkdir()
    assert main([*args, str(empty)]) == 2
    assert capsys.readouterr().err.startswith(f"cricket-attn-players: nothing to value in {empty}: ")
    assert main([*args, "--history", str(empty), str(FIXTURES)]) == 2
    assert capsys.readouterr().err.startswith(f"cricket-attn-players: --history {empty}: ")


def test_bootstrap_draws_that_would_not_fit_in_memory_are_refused_before_the_valuation(
    tracked_run, tmp_path, capsys, monkeypatch
):
    """--boot 1e9 asked for 551 GiB (a traceback after 20 s): one line, before any match is valued."""
    from cricket_attn.commands import players as command

    monkeypatch.setattr(command, "value_matches", lambda *a, **k: pytest.fail("the matches were valued"))
    out = tmp_path / "p.csv"
    argv = ["--model", tracked_run["results"]["checkpoint"], "--out", str(out), "--no-mlflow", str(FIXTURES)]
    assert main([*argv, "--boot", "1000000000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cricket-attn-players: --boot 1,000,000,000: would need about ") and "\n" not in err
    assert "free here; at most " in err and not out.exists()
