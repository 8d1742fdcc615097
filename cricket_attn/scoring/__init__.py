"""A trained model over deliveries: checkpoints (written and read without Lightning) → serving (a model
from a checkpoint or MLflow) → probabilities (every ball's outcome distribution) → recent (the league's
level since training); predict and evaluate are the commands, mlflow_model the MLflow wrapper."""
