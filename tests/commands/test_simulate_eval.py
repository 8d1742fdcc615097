"""cricket-attn-simulate-eval end to end on the fixture matches: the report, the pictures, the MLflow run."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

from cricket_attn.commands.simulate_eval import main, parse_args
from tests.conftest import FIXTURES


def test_the_evaluation_writes_and_logs_its_report(tracked_run, tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    out = tmp_path / "sim"
    assert (
        main(
            [
                "--model",
                tracked_run["results"]["checkpoint"],
                "--sims",
                "4",
                "--sources",
                str(FIXTURES),
                "--out",
                str(out),
                "--plots",
                "1",
                "--check-sims",
                "2",
                "--who-sims",
                "2",
                "--tracking-uri",
                uri,
            ]
        )
        == 0
    )
    report = (out / "simulation.md").read_text()
    assert "Chase win probability" in report and "First-innings total" in report and "(5 matches;" in report
    # By default, for a model reading records as of the day (the league's level among them), no offset on top.
    first_line = report.splitlines()[0]
    assert first_line.endswith("; innings-level spread 0.1.") and "recent level" not in first_line
    # Where the simulator can go wrong, each on its own: per-ball levels, the classes' run values, the bowler
    # rule, and simulated innings from ball 0, for the last training season and the test seasons.
    for title in (
        "Per delivery, real against the model",
        "Run value of each outcome class",
        "The bowler rule against the real bowler",
        "Simulated against real innings from ball 0",
        "Who plays: the first-innings projection",
    ):
        assert title in report
    assert "| 2024 | first |" in report and "| 2025 | chase |" in report
    assert (out / "reliability.png").is_file() and len(list((out / "matches").glob("*.png"))) == 2
    (run,) = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("cricket_attn").experiment_id])
    assert run.data.tags["model_family"] == "simulator" and run.info.status == "FINISHED"
    assert run.data.params["recent_level"] == "0.0" and run.data.params["spread"] == "0.1"
    assert 0 <= run.data.metrics["sim/brier"] <= 1 and "sim/total_mae_10" in run.data.metrics
    assert "why/wickets_gap_per_innings_2025_chase" in run.data.metrics
    assert "MLflow run" in capsys.readouterr().out


def test_one_competition_is_evaluated_while_the_model_reads_every_competitions_records(
    tracked_run, tmp_path, monkeypatch, capsys
):
    """--competition on a pooled table: the IPL's test matches alone are simulated and scored (the others'
    2025 internationals are not), while the records the model reads as of each day come from every
    competition's matches, as in training on data=t20; a competition not in the data is one line."""
    from cricket_attn.data.sequences import SequenceEncoder

    read, real = [], SequenceEncoder.attach_known
    monkeypatch.setattr(
        SequenceEncoder, "attach_known", lambda self, known: (read.append(set(known["competition"])), real(self, known))
    )
    uri, out = f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "sim"
    common = ["--model", tracked_run["results"]["checkpoint"], "--sims", "2", "--check-sims", "0", "--plots", "0"]
    common += ["--sources", str(FIXTURES), str(FIXTURES.parent / "cricsheet_t20"), "--tracking-uri", uri]
    assert main([*common, "--competition", "Indian Premier League", "--out", str(out)]) == 0
    assert "(5 matches of Indian Premier League;" in (out / "simulation.md").read_text()
    assert read and {"T20 Blast", "Big Bash League", "Indian Premier League"} <= read[0]
    (run,) = MlflowClient(uri).search_runs([MlflowClient(uri).get_experiment_by_name("cricket_attn").experiment_id])
    assert run.data.params["competitions"] == "Indian Premier League"
    assert main([*common, "--competition", "Indian Premier Leag", "--out", str(out)]) == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith("--competition Indian Premier Leag: no match of it in the data")
    )


@pytest.mark.parametrize(
    "flag, value, allowed",
    [
        ("--matches", "-1", "must be at least 1"),
        ("--matches", "0", "must be at least 1"),
        ("--sims", "0", "must be at least 1"),
        ("--sims", "many", "must be an integer"),
        ("--check-sims", "-1", "must be 0 (skip the check) or more"),
        ("--who-sims", "-1", "must be 0 (skip the check) or more"),
        ("--plots", "-3", "must be at least 0"),
        ("--seed", "-1", "must be at least 0"),
    ],
)
def test_a_count_out_of_range_is_refused_by_name_before_anything_is_read(flag, value, allowed, capsys):
    with pytest.raises(SystemExit) as stop:
        parse_args(["--model", "no/such/model.ckpt", flag, value])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines() == [f"cricket-attn-simulate-eval: argument {flag}: {value}: {allowed}"]


def test_counts_in_range_are_taken():
    args = parse_args(["--model", "m.ckpt", "--matches", "5", "--sims", "1", "--check-sims", "0", "--plots", "0"])
    assert (args.matches, args.sims, args.check_sims, args.plots, args.who_sims) == (5, 1, 0, 0, 0)


@pytest.mark.parametrize("flag", ["--sims", "--check-sims", "--who-sims"])
def test_simulations_that_would_not_fit_in_memory_are_refused_before_the_model_runs(
    tracked_run, tmp_path, capsys, monkeypatch, flag
):
    """A count of simulations whose states would not fit (1e12 of every state of a match) is one line naming the
    flag, the estimate and the most this machine takes, before the simulator is built; nothing is written."""
    import re

    from cricket_attn.commands import simulate_eval

    monkeypatch.setattr(simulate_eval.Simulator, "build", lambda *a, **k: pytest.fail("the simulator was built"))
    monkeypatch.setattr(simulate_eval, "since_training", lambda *a, **k: pytest.fail("the model was run"))
    out = tmp_path / "sim"
    argv = ["--model", tracked_run["results"]["checkpoint"], "--sources", str(FIXTURES), "--out", str(out)]
    argv += ["--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", flag, "1000000000000"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after MLflow's lines on making the store
    assert re.fullmatch(
        rf"cricket-attn-simulate-eval: {flag} 1,000,000,000,000: would need about [\d,.]+ TiB of memory, more than "
        r"the [\d.]+ GiB free here; at most [\d,]+ on this machine now",
        err,
    )
    assert not out.exists()
