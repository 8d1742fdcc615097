"""A trained model over deliveries: checkpoints (written and read without Lightning) → serving (a model
from a checkpoint or MLflow, and the matches it can take) → probabilities (every ball's outcome
distribution) → recent and form (the league's level and players' form since training); attention (what
the heads look at); cli (what the commands share); predict, evaluate and attention are the commands,
mlflow_model the MLflow wrapper."""
