"""Ball-by-ball cricket outcome prediction over Cricsheet data.

The package in the order data flows, each stage importing only what lies below it: the floor (`laws`, the
laws of the game; `settings`, every command's settings checked; `metrics`, `tracking`, small helpers) →
`data` (Cricsheet files to training batches) → `model` (the causal transformer, pure PyTorch) and
`kv_cache` → `training` (the protocol, baselines, ablations) and `scoring` (a trained model over
deliveries, and what its heads look at) → `simulation` (matches rolled forward).
"""
