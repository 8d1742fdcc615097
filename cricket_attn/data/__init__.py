"""From Cricsheet files to training batches, in the order the data flows: sources → cricsheet (one match
file to checked rows) → deliveries (the table and its cache; official_results checks it against the
results) → splits → features (the match state before each ball, one definition for training and the
simulator; players' rates; the trees' features) → histories (players' earlier balls) → sequences
(innings as tensors with their positions) → teacher (the trees' targets) → datamodule. `cricket-attn-ingest`
(cricket_attn.commands.ingest) is the command over the first three."""
