"""The MLflow model's code (MLflow "models from code"): logged with each model, so loading it runs
this file rather than unpickling an object."""

from mlflow.models import set_model

from cricket_attn.serving import DeliveriesModel

set_model(DeliveriesModel())
