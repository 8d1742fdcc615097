"""What a trained model needs to run, below training and every command: checkpoints (written and read
without Lightning) → serving (a model from a checkpoint or MLflow, and the matches it can take) →
probabilities (every ball's outcome distribution) → recent and form (the league's level and players' form
since training); attention (what the heads look at, and the pictures); mlflow_model (the MLflow wrapper);
reading (the match files a command reads, what the model does not know, the summary it prints); matchups (a
batter against bowlers: the model's view beside the pair's record, and its picture); kv_cache
(ball-by-ball inference's keys and values, and the simulator's, many simulations sharing one innings' balls)."""
