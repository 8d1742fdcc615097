"""`cricket-attn-evaluate` (cricket_attn/commands/evaluate.py) with `--no-log`, on real match files and the untrained
tiny model of `fixture_simulator` saved as training saves a checkpoint: the split asked for scored and
reported; a bad model, store, split or argument refused in one line. (Logging to MLflow: tests/test_tracking.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cricket_attn.commands import evaluate
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.checkpoints import FORMAT, FORMAT_KEY, PREFIX
from cricket_attn.inference.serving import from_checkpoint
from cricket_attn.metrics import score
from cricket_attn.model import CricketTransformer
from tests.conftest import FIXTURES

VALIDATION, TEST = ["1422119"], ["1473438", "1473439"]  # a match of 2024, two of 2025 (README)


def write_checkpoint(path: Path, model: CricketTransformer, encoder: SequenceEncoder) -> Path:
    """A model's checkpoint as training writes it: its settings, its weights under `model.`, the fitted
    encoder, the format."""
    torch.save(
        {
            "hyper_parameters": {"model": model.cfg.to_dict()},
            "state_dict": {PREFIX + k: v for k, v in model.state_dict().items()},
            "CricketDataModule": {"encoder": encoder.to_dict()},
            FORMAT_KEY: FORMAT,
        },
        path,
    )
    return path


@pytest.fixture(scope="module")
def checkpoint(fixture_simulator, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "tiny.ckpt"
    return write_checkpoint(path, fixture_simulator.model, fixture_simulator.encoder)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """Where the command caches its tables: a folder of the tests', not the project's data/."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture
def command(data_dir, monkeypatch):
    monkeypatch.setattr(evaluate, "project_path", lambda path: data_dir)
    return evaluate


def args(checkpoint, *extra: str) -> list[str]:
    files = [str(FIXTURES / f"{m}.json") for m in VALIDATION + TEST]
    return ["--model", str(checkpoint), "--no-log", "--sources", *files, *extra]


def test_the_test_split_is_scored_and_each_metric_printed(command, checkpoint, deliveries, data_dir, capsys):
    """Of a 2024 match and two of 2025, the test split is the two 2025 matches' regular balls, scored as the
    checkpoint scores them."""
    metrics = command.evaluate(command.parse_args(args(checkpoint, "--split", "test")))
    mine = deliveries[deliveries["match_id"].isin(TEST)]
    assert metrics["deliveries"] == len(mine[~mine["is_super_over"]])
    expected = score(from_checkpoint(checkpoint).score(mine))
    assert metrics.keys() == expected.keys() and {"log_loss", "brier", "ece", "log_loss_death"} <= metrics.keys()
    assert metrics == pytest.approx(expected, abs=1e-9)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"test/{key}: {value:.6g}" for key, value in metrics.items()]
    assert list((data_dir / "cache").glob("deliveries-*.parquet"))  # the tables cached where the config says


def test_a_split_without_deliveries_is_refused_naming_it(command, checkpoint):
    with pytest.raises(SystemExit, match="^cricket-attn-evaluate: the train split has no deliveries in ") as err:
        command.evaluate(command.parse_args(args(checkpoint, "--split", "train")))
    assert "\n" not in str(err.value.code)


def test_a_missing_model_is_one_line_and_exit_status_2_before_any_data_is_read(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(evaluate, "project_path", lambda path: tmp_path / "data")
    missing = tmp_path / "missing.ckpt"
    assert evaluate.main(args(missing)) == 2
    assert capsys.readouterr().err.splitlines() == [f"cricket-attn-evaluate: {missing}: no such checkpoint file"]
    assert not (tmp_path / "data").exists()


def test_a_store_that_cannot_be_used_is_refused_before_the_model_is_read(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'nowhere' / 'mlflow.db'}"
    assert evaluate.main(["--model", str(tmp_path / "missing.ckpt"), "--tracking-uri", uri]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"cricket-attn-evaluate: MLflow tracking URI {uri}: folder ")
    assert not (tmp_path / "nowhere").exists()


def test_the_arguments_default_to_the_ipl_test_split_logged_and_refuse_an_unknown_split(capsys):
    parsed = evaluate.parse_args(["--model", "m.ckpt"])
    assert (parsed.split, parsed.data, parsed.no_log, parsed.sources) == ("test", "ipl", False, None)
    for argv, named in ((["--model", "m.ckpt", "--split", "holdout"], "--split"), ([], "--model")):
        with pytest.raises(SystemExit) as err:
            evaluate.parse_args(argv)
        assert err.value.code == 2 and named in capsys.readouterr().err
