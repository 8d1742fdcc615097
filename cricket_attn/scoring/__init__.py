"""The commands that run a trained model over match files: predict (every ball's outcome distribution),
evaluate (a model's scores on a split of a data config) and attention (what the heads look at). What they
run is the inference floor (cricket_attn.inference); what every command shares, cricket_attn.cli."""
