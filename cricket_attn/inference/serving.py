"""A trained model as something to score with: loaded from a checkpoint or an MLflow model URI, and
logged to MLflow as a pyfunc model that takes a deliveries table (cricket_attn.inference.mlflow_model). MLflow is
imported only where it is used, so scoring a checkpoint starts without it.

The checkpoint is the single source of truth: the MLflow model is the checkpoint as an artifact plus
a small wrapper, so `runs:/<id>/model`, `models:/<name>@<alias>` and the `.ckpt` file all load the
same weights and the same fitted encoder.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from cricket_attn.data.deliveries import Ingested, PhaseRules
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.checkpoints import CheckpointError, load_model
from cricket_attn.inference.probabilities import model_config, model_reach, score_deliveries
from cricket_attn.model import CricketTransformer, Ensemble, ModelConfig

CHECKPOINT_ARTIFACT = "checkpoint"
MLFLOW_SCHEMES = ("runs:/", "models:/", "mlflow-artifacts:/")


@dataclass
class TrainedModel:
    model: CricketTransformer | Ensemble
    encoder: SequenceEncoder
    source: str

    @property
    def config(self) -> ModelConfig:
        return model_config(self.model)

    def cannot_take(self, deliveries: pd.DataFrame, scheduled: bool = False) -> dict[str, str]:
        """The matches whose innings reach a position the model's tables do not hold (`model_reach`: an ODI's
        25th over, an over of 14 balls), each with the reason; with `scheduled`, also by the innings' length
        as scheduled (a simulation plays an innings to its end)."""
        return {str(m): f"match {m}: {reason}" for m, reason in model_reach(self.config, deliveries, scheduled).items()}

    def playable(self, tables: Ingested, scheduled: bool = False) -> tuple[Ingested, list[str]]:
        """`tables` without the matches the model cannot take (`cannot_take`), and why each was left out."""
        refused = self.cannot_take(tables.deliveries, scheduled)
        kept = tables.deliveries[~tables.deliveries["match_id"].astype(str).isin(refused)]
        return replace(tables, deliveries=kept), list(refused.values())

    def score(self, deliveries: pd.DataFrame, desc: str | None = None) -> pd.DataFrame:
        """`score_deliveries` with this model; `desc` names a progress bar (on a terminal). A model that
        reads players' histories takes them from these deliveries, unless some are attached already."""
        if not self.encoder.known_attached:
            self.encoder.attach_known(deliveries)
        return score_deliveries(self.model, self.encoder, deliveries, desc=desc)


def from_checkpoint(path: str | Path) -> TrainedModel:
    model, ckpt = load_model(path)
    state = ckpt.get("CricketDataModule", {})
    if "encoder" not in state:
        raise CheckpointError(
            f"{path}: the checkpoint has no fitted data encoder (was it saved by cricket-attn-train?)"
        )
    try:
        encoder = SequenceEncoder.from_dict(state["encoder"])
    except ValueError as err:
        raise CheckpointError(f"{path}: {err}") from None
    return TrainedModel(model, encoder, str(path))


def load_trained(ref: str, tracking_uri: str | None = None) -> TrainedModel:
    """A checkpoint path or an MLflow model URI; one clear CheckpointError if it is neither."""
    if not ref.startswith(MLFLOW_SCHEMES):
        return from_checkpoint(ref)
    import mlflow  # only for a model in MLflow: scoring a checkpoint starts without it

    try:
        if tracking_uri:
            mlflow.set_tracking_uri(tracking_uri)
        folder = Path(mlflow.artifacts.download_artifacts(artifact_uri=ref))
    except Exception as err:  # a missing run, model or alias: one line, naming the URI
        raise CheckpointError(
            f"{ref}: no such MLflow model ({type(err).__name__}: {str(err).splitlines()[0]})"
        ) from None
    try:
        flavor = mlflow.models.Model.load(str(folder)).flavors["python_function"]
        path = folder / flavor["artifacts"][CHECKPOINT_ARTIFACT]["path"]
    except (KeyError, TypeError, OSError, mlflow.exceptions.MlflowException):
        raise CheckpointError(f"{ref}: not a cricket_attn MLflow model (no {CHECKPOINT_ARTIFACT} artifact)") from None
    trained = from_checkpoint(path)
    trained.source = ref
    return trained


def load_with_data(
    ref: str, tracking_uri: str | None, data: str, sources: list[str] | None
) -> tuple[TrainedModel, PhaseRules, Ingested]:
    """An evaluation's model (`load_trained`: a bad one fails before any data is read), the phase rules of the
    data config `data`, and its tables (from `sources`, else the config's), the model reading every match of
    them before each day (its records and histories attached)."""
    from omegaconf import OmegaConf

    from cricket_attn.config import load_data_config, project_path
    from cricket_attn.data.deliveries import load_tables
    from cricket_attn.data.sources import configured_sources

    trained = load_trained(ref, tracking_uri)
    cfg = load_data_config(data)
    phases = PhaseRules.from_config(OmegaConf.to_container(cfg.phases, resolve=True))
    tables = load_tables(sources or configured_sources(cfg.sources), phases, project_path(cfg.data_dir))
    trained.encoder.attach_known(tables.deliveries)  # records and histories: every match before the day
    return trained, phases, tables


def log_model(
    run_id: str,
    checkpoint: str | Path,
    example: pd.DataFrame,
    example_scored: pd.DataFrame,
    registered_name: str | None = None,
):
    """Log the checkpoint as the run's `model` (pyfunc over a deliveries table), with the signature of
    `example` and what the model made of it (`example_scored`, so the checkpoint is not loaded again)."""
    import mlflow
    from mlflow.models import infer_signature

    from cricket_attn.data.deliveries import plain_types

    with warnings.catch_warnings():
        # MLflow hints that integer columns cannot hold missing values. A deliveries table's integer
        # columns are never missing (the nullable ones are floats in plain_types), and declaring them
        # double would refuse the integer columns users pass, so the hint does not apply.
        warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer column")
        signature = infer_signature(plain_types(example), plain_types(example_scored))
    with mlflow.start_run(run_id=run_id):
        return mlflow.pyfunc.log_model(
            name="model",
            python_model=str(Path(__file__).with_name("mlflow_model.py")),
            artifacts={CHECKPOINT_ARTIFACT: str(checkpoint)},
            signature=signature,
            input_example=plain_types(example),
            registered_model_name=registered_name,
            pip_requirements=["cricket_attn", "torch", "pandas", "pytorch-lightning", "mlflow"],
        )
