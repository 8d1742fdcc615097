"""`cricket-attn-ablate`: the ablation set of conf/ablation.yaml, run and reported in one command.

Each (variant, protocol, seed) is an ordinary `cricket-attn-train` run in its own output folder, tagged
`ablation`, `variant`, `protocol`, `seed` and `settings` in the ablation experiment. The runs to train go
as one multirun of the training app through Hydra's `hydra/launcher`: joblib here (`jobs` at once), or
the one given, e.g. submitit on a SLURM cluster. The jobs are a list, not a grid a sweeper could make, so
the launcher is handed each job's overrides directly. What a finished run scored, match by match, goes
into the record (`record_dir`, kept in git) as it finishes. A run in the record or FINISHED in the store
is not trained again and a killed one is resumed, so the command continues a stopped ablation, on this
machine or from a clone on another. The report pairs each variant with the default on the same balls:
the variant's log loss minus the default's, averaged over the seeds both have, with a 95% bootstrap
interval by match.
"""
