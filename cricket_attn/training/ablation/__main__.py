"""`python -m cricket_attn.training.ablation`: the same as `cricket-attn-ablate`."""

from cricket_attn.training.ablation.command import main

main()
