"""Ball-by-ball cricket outcome prediction over Cricsheet data.

The package in the order data flows: `data` (Cricsheet files to training batches) → `model` (the causal
transformer, pure PyTorch) → `training` (the protocol, baselines, ablations) → `scoring` (a trained model
over deliveries) → `simulation` (matches rolled forward); `attention` shows what the heads look at.
"""
