"""Training and comparing: lit_module (loss, metrics, optimiser around the model) → train (the protocol:
choose the epochs, calibrate, refit, test, log), baselines (the models the transformer is paired with),
ablation (sets of training runs through Hydra's launcher, each paired with the default)."""
