"""The MLflow pyfunc model's code (cricket_attn/inference/mlflow_model.py), in process and without a tracking store:
its context's checkpoint loaded, and a real match's deliveries, with the plain types MLflow passes, scored
as the checkpoint scores them. (Logged, loaded and served through MLflow: tests/test_tracking.py.)"""

from __future__ import annotations

import mlflow.pyfunc
import pandas as pd
import pytest

from cricket_attn.data.deliveries import plain_types
from cricket_attn.inference.checkpoints import CheckpointError
from cricket_attn.inference.mlflow_model import DeliveriesModel
from cricket_attn.inference.serving import CHECKPOINT_ARTIFACT, from_checkpoint
from cricket_attn.metrics import PROB_COLUMNS
from tests.commands.test_evaluate import write_checkpoint


def context(path) -> mlflow.pyfunc.PythonModelContext:
    """What MLflow hands the model on loading: its artifacts by name."""
    return mlflow.pyfunc.PythonModelContext(artifacts={CHECKPOINT_ARTIFACT: str(path)}, model_config=None)


def test_a_match_given_with_plain_types_is_scored_as_the_checkpoint_scores_it(fixture_simulator, deliveries, tmp_path):
    """1216493, a tie and its super overs: the regular balls come back, in plain types, with the checkpoint's
    probabilities."""
    path = write_checkpoint(tmp_path / "tiny.ckpt", fixture_simulator.model, fixture_simulator.encoder)
    match = deliveries[deliveries["match_id"] == "1216493"].reset_index(drop=True)
    model = DeliveriesModel()
    model.load_context(context(path))
    out = model.predict(context(path), plain_types(match))
    assert not any(isinstance(dtype, pd.CategoricalDtype) for dtype in out.dtypes)
    assert len(out) == int((~match["is_super_over"]).sum())
    assert (out[list(PROB_COLUMNS)].sum(axis=1) - 1).abs().max() < 1e-9
    pd.testing.assert_frame_equal(out, plain_types(from_checkpoint(path).score(match)))


def test_a_context_without_its_checkpoint_fails_naming_the_file(tmp_path):
    missing = tmp_path / "artifacts" / "tiny.ckpt"
    with pytest.raises(CheckpointError, match=f"^{missing}: no such checkpoint file$"):
        DeliveriesModel().load_context(context(missing))
