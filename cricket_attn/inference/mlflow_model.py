"""The MLflow model's code (MLflow "models from code"): logged with each model, so loading it runs
this file rather than unpickling an object. `cricket_attn.inference.serving.log_model` logs it."""

import mlflow
import pandas as pd
from mlflow.models import set_model

from cricket_attn.inference.serving import CHECKPOINT_ARTIFACT, from_checkpoint


class DeliveriesModel(mlflow.pyfunc.PythonModel):
    """`mlflow.pyfunc.load_model(uri).predict(deliveries)`: the scored deliveries, as the scripts give them."""

    def load_context(self, context):
        self.trained = from_checkpoint(context.artifacts[CHECKPOINT_ARTIFACT])

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        from cricket_attn.data.deliveries import plain_types, restore_types

        return plain_types(self.trained.score(restore_types(model_input)))


set_model(DeliveriesModel())
