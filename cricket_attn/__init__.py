"""Ball-by-ball cricket outcome prediction over Cricsheet data.

The package in the order data flows, each stage importing only what lies below it: the floor (`laws`, the
laws of the game; `settings`, every command's settings checked; `cli`, the command-line kit; `metrics`,
`tracking`, small helpers) → `data` (Cricsheet files to training batches) → `model` (the causal transformer,
pure PyTorch) → `inference` (what a trained model needs to run: checkpoints, probabilities, serving, the KV
cache) → `training` (the protocol, baselines, ablations) → `simulation` (matches rolled forward, before and
during play) → `valuation` (what players are worth) → `commands` (the console scripts, one module each: reading
their arguments, calling the stages below, writing what they give).
"""
