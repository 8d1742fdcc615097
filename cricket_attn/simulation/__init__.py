"""Rolling the ball model forward: the incremental match state, the scorebook of each outcome class, who
bats and bowls next, and Monte Carlo innings and matches with the KV cache."""
