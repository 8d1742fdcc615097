"""A trained model knows the positions its tables hold and refuses, by name and reason, a match that
reaches beyond them, before any tensor is built (a short ODI, an over of 14 balls)."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest

from cricket_attn.data.deliveries import build_tables
from cricket_attn.data.sources import MatchFile
from cricket_attn.inference.probabilities import model_reach
from cricket_attn.model import ModelConfig
from tests.conftest import FIXTURES
from tests.test_model import TINY

# The default tables (24 overs, 12 balls), a numeric embedding that needs no quantiles.
MODEL = ModelConfig(**TINY)


def short_odi(match_id: str = "1473438") -> dict:
    """A real T20 match made a short ODI: 50 overs scheduled, the first innings 25 overs long (its first five
    overs bowled again as overs 21-25)."""
    doc = json.loads((FIXTURES / f"{match_id}.json").read_text())
    doc["info"]["match_type"], doc["info"]["overs"] = "ODI", 50
    first = doc["innings"][0]["overs"]
    first += [dict(copy.deepcopy(over), over=20 + i) for i, over in enumerate(first[:5])]
    return doc


def long_over(match_id: str = "1473438") -> dict:
    """A real match with its first over bowled as 14 legal balls (its balls twice, plus two)."""
    doc = json.loads((FIXTURES / f"{match_id}.json").read_text())
    over = doc["innings"][0]["overs"][0]
    legal = [b for b in over["deliveries"] if not {"wides", "noballs"} & set(b.get("extras", {}))]
    over["deliveries"] = (legal * 3)[:14]
    return doc


@pytest.fixture(scope="module")
def shapes(phases):
    good = json.loads((FIXTURES / "1473439.json").read_text())
    files = [
        MatchFile(f"{name}.json", name, json.dumps(doc).encode())
        for name, doc in (("good", good), ("odi", short_odi()), ("over14", long_over()))
    ]
    return build_tables(files, phases).deliveries


def test_a_match_beyond_the_models_tables_is_named_with_its_reason(shapes):
    refused = model_reach(MODEL, shapes)
    assert set(refused) == {"odi", "over14"}  # the real T20 match beside them is taken
    assert refused["odi"] == (
        "innings 1 reaches 25 overs, more than the model's tables hold (model.max_overs=24; "
        "it was trained on T20 innings)"
    )
    assert (
        refused["over14"].startswith("innings 1 reaches 14 balls in an over")
        and "max_ball_in_over=12" in refused["over14"]
    )


def test_a_simulation_is_measured_by_the_innings_as_scheduled(shapes):
    """An ODI's second innings of 17 overs fits the tables, but played to its end it would reach 50 overs."""
    scheduled = shapes[shapes["match_id"] == "good"].assign(scheduled_overs=50, match_id="odi50")
    assert model_reach(MODEL, scheduled) == {}
    assert model_reach(MODEL, scheduled, scheduled=True)["odi50"].startswith("innings 1 reaches 300 legal balls")


@pytest.mark.parametrize("command", ["predict", "simulate"])
def test_the_commands_take_the_good_match_and_name_the_others(command, tracked_run, tmp_path, capsys):
    """A short ODI and an over of 14 balls in the folder beside a real match: exit status 0, the real match
    scored (or simulated), each other named in one line, no traceback."""
    from cricket_attn.commands import predict, simulate

    for name, doc in (
        ("1473439", json.loads((FIXTURES / "1473439.json").read_text())),
        ("odi", short_odi()),
        ("over14", long_over()),
    ):
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    out = tmp_path / "out.csv"
    args = ["--model", tracked_run["results"]["checkpoint"], "--out", str(out), str(tmp_path)]
    main = predict.main if command == "predict" else simulate.main
    assert main([*args, "--sims", "2", "--no-mlflow"] if command == "simulate" else args) == 0
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err + printed.out
    assert set(pd.read_csv(out)["match_id"].astype(str)) == {"1473439"}
    named = [line for line in printed.out.splitlines() if line.strip().startswith("match ")]
    assert len(named) == 2 and "match odi: innings 1 reaches" in named[0] + named[1]  # 25 overs; 300 balls scheduled
    assert any("match over14: innings 1 reaches 14 balls in an over" in line for line in named)
