"""Rolling the ball model forward: state (the incremental match state of N simulations) → scorebook (an
outcome class to a delivery) → rules (who bats and bowls next) → rollout (innings with the KV cache) →
match (projections, "what if") → against_baselines and realism (against match-level baselines and real
innings) → before (a match before its first ball) and before_eval (every match so, against two yardsticks);
the commands over them are cricket_attn.commands' simulate, simulate_eval and before_eval."""
