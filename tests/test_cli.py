"""The command-line kit (cricket_attn/cli.py): outputs checked before any work, tables written whole or not at all
with their probabilities checked first, and every refusal one line naming the argument."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from cricket_attn import cli
from cricket_attn.metrics import PROB_COLUMNS

PROC = Path("/proc/self").is_dir()  # Linux's /proc: a folder root may write in by its permissions, taking no file


@pytest.fixture(scope="module")
def phase_rates(deliveries) -> pd.DataFrame:
    """Each real delivery with its phase's outcome distribution over the fixtures: one distribution per row."""
    regular = deliveries[~deliveries["is_super_over"]].reset_index(drop=True)
    rates = pd.crosstab(regular["phase"], regular["outcome"], normalize="index")
    rates = rates.reindex(columns=[c.removeprefix("p_") for c in PROB_COLUMNS], fill_value=0.0)
    p = rates.loc[regular["phase"]].to_numpy()
    return regular[["match_id", "innings", "delivery_index", "batter"]].assign(**dict(zip(PROB_COLUMNS, p.T)))


def one_line(err: pytest.ExceptionInfo, *parts: str) -> None:
    message = str(err.value)
    assert "\n" not in message and all(part in message for part in parts), message


def test_an_output_is_a_table_file_in_a_folder_that_takes_one(tmp_path):
    cli.check_out_path(tmp_path / "not" / "made" / "yet.parquet")  # its folders are made when it is written
    cli.check_out_path(tmp_path / "scores.csv", "--balls-out")
    assert not (tmp_path / "not").exists()
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    refused = {
        tmp_path / "scores.json": "the file name must end in .parquet or .csv",
        tmp_path / "folder.csv": "is a folder; give a file name ending in .parquet or .csv",
        tmp_path / "notes.txt" / "scores.csv": f"cannot write in {tmp_path / 'notes.txt'} (not a folder)",
    }
    if PROC:
        refused[Path("/proc/scores.csv")] = "cannot write in /proc ("
    for path, reason in refused.items():
        with pytest.raises(ValueError) as err:
            cli.check_out_path(path, "--balls-out")
        assert str(err.value).startswith(f"--balls-out {path}: ")
        one_line(err, reason)


def test_a_folder_for_pictures_may_be_missing_but_not_a_file(tmp_path):
    cli.check_out_folder("--plots", tmp_path / "plots" / "matches")
    assert not (tmp_path / "plots").exists()  # checked, not made
    (tmp_path / "plots").write_text("a file")
    with pytest.raises(ValueError) as err:
        cli.check_out_folder("--plots", tmp_path / "plots")
    one_line(err, f"--plots {tmp_path / 'plots'}: is a file; give a folder (made if missing)")


def test_a_run_that_would_not_fit_in_memory_is_refused_naming_the_setting():
    cli.check_memory("--sims", 1, per_unit=1.0)
    with pytest.raises(ValueError) as err:
        cli.check_memory("--sims", 1_000_000, per_unit=2.0**40, fixed=1.0)
    assert str(err.value).startswith("--sims 1,000,000: would need about 1,000,000 TiB of memory, more than the ")
    one_line(err, "free here; at most 0 on this machine now")


def test_one_distribution_per_ball_passes_and_a_broken_row_is_named_by_its_match(phase_rates):
    cli.check_probabilities(phase_rates, PROB_COLUMNS, whole=True)
    broken = phase_rates.copy()
    rows = {5: np.nan, 700: -0.01, 2000: 1.5}  # not a number, below nothing, above certainty
    column = broken.columns.get_loc(PROB_COLUMNS[0])
    for row, value in rows.items():
        broken.iloc[row, column] = value
    broken.iloc[3000, column] *= 0.5  # a row of numbers in [0, 1] that no longer sums to 1
    with pytest.raises(ValueError) as err:
        cli.check_probabilities(broken, PROB_COLUMNS, whole=True)
    first = broken["match_id"].iloc[5]
    one_line(err, f"4 rows have probabilities that are not numbers in [0, 1] summing to 1 (first: match {first})",
             "nothing written")  # fmt: skip
    with pytest.raises(ValueError) as err:
        cli.check_probabilities(broken.drop(columns="match_id"), PROB_COLUMNS, whole=True)
    one_line(err, "(first: row 5)")


def test_probabilities_that_are_not_one_distribution_need_not_sum_to_one(phase_rates):
    """A boundary's chances, a four's and a six's: numbers in [0, 1] whose sum is not 1."""
    boundaries = ["p_4", "p_6"]
    assert (phase_rates[boundaries].sum(axis=1) < 1).all()
    cli.check_probabilities(phase_rates, boundaries, whole=False)
    with pytest.raises(ValueError) as err:
        cli.check_probabilities(phase_rates.assign(p_6=phase_rates["p_6"] + 1), boundaries, whole=False)
    one_line(err, f"{len(phase_rates):,} rows have probabilities that are not numbers in [0, 1] (first: match")


def test_a_table_is_written_whole_by_its_suffix_or_the_old_one_is_kept(phase_rates, tmp_path):
    table = phase_rates.head(200).assign(batter=phase_rates["batter"].astype(str))
    cli.write_table(table, tmp_path / "scores.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "scores.parquet"), table)
    cli.write_table(table, tmp_path / "scores.csv")
    back = pd.read_csv(tmp_path / "scores.csv", dtype={"match_id": str})
    np.testing.assert_allclose(back[list(PROB_COLUMNS)], table[list(PROB_COLUMNS)], rtol=1e-8)  # 9 digits
    unwritable = table.assign(batter=[1, *table["batter"].iloc[1:]])  # a column of a number and names
    with pytest.raises(pa.ArrowException):
        cli.write_table(unwritable, tmp_path / "scores.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "scores.parquet"), table)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.csv", "scores.parquet"]  # no temporary file


@pytest.mark.skipif(not PROC, reason="needs Linux's /proc")
def test_a_file_the_system_refuses_is_one_line_naming_the_output(phase_rates):
    with pytest.raises(ValueError) as err:
        cli.write_table(phase_rates.head(5), Path("/proc/scores.csv"))
    one_line(err, "--out /proc/scores.csv: cannot write (No such file or directory)")
    assert "Errno" not in str(err.value)


def test_what_the_system_said_is_one_line():
    with pytest.raises(OSError) as err:
        open("/nonexistent/cricket_attn/scores.csv")
    assert cli.os_reason(err.value) == "No such file or directory"
    assert cli.os_reason(OSError("the disk went away\nTraceback ...")) == "the disk went away"
    assert cli.os_reason(OSError()) == "OSError"


def test_a_command_prints_its_summary_or_one_line_and_an_exit_status(tmp_path, capsys):
    args = argparse.Namespace(path=tmp_path / "missing.json", value=-3)

    def summary(a):
        return f"read {a.value} matches"

    def refuses(a):
        raise ValueError(f"--matches {a.value}: must be at least 0")

    def reads(a):
        return Path(a.path).read_text()

    def interrupted(a):
        raise KeyboardInterrupt

    assert cli.run_command("cricket-attn-x", summary, args) == 0
    assert capsys.readouterr().out == "read -3 matches\n"
    for run, status, line in (
        (refuses, 2, "cricket-attn-x: --matches -3: must be at least 0"),
        (reads, 2, f"cricket-attn-x: {args.path}: No such file or directory"),
        (interrupted, 130, "cricket-attn-x: interrupted; nothing half written"),
    ):
        assert cli.run_command("cricket-attn-x", run, args) == status
        printed = capsys.readouterr()
        assert printed.err.splitlines() == [line] and printed.out == ""


def test_a_command_names_what_else_it_refuses_in_one_line(capsys):
    class StoreError(RuntimeError):
        pass

    def store(a):
        raise StoreError("sqlite:///x.db: not an MLflow store")

    assert cli.run_command("cricket-attn-x", store, argparse.Namespace(), also=(StoreError,)) == 2
    assert capsys.readouterr().err.splitlines() == ["cricket-attn-x: sqlite:///x.db: not an MLflow store"]
    with pytest.raises(StoreError):  # not named: a fault, with its traceback
        cli.run_command("cricket-attn-x", store, argparse.Namespace())
