"""Who bowls: the bowler rule's fit to the real bowler of every over after the first, each player's usage counted
from his own last matches (for whichever side), per season (`realism.bowler_rule_fit`: the mean log-likelihood
of the real bowler per over, against drawing evenly).

    python docs/analyses/bowler_rule.py --model <checkpoint> --seasons 2023 2024 2025 2026

The model only sets up the innings (the rule does not read it). Counting the side's last matches instead was
measured worse in every season and left the code; its figures and the commit that reproduces them are in
docs/log/2026-11-27.md.
"""

from __future__ import annotations

import argparse

from omegaconf import OmegaConf

from cricket_attn.config import load_data_config
from cricket_attn.data.deliveries import PhaseRules, config_tables
from cricket_attn.inference.serving import load_trained
from cricket_attn.metrics import markdown_table
from cricket_attn.simulation.realism import bowler_rule_fit
from cricket_attn.simulation.rollout import Simulator


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--data", default="ipl")
    p.add_argument("--sources", nargs="+", help="Cricsheet zips, folders or match files (default: the data config's)")
    p.add_argument("--seasons", type=int, nargs="+", default=[2023, 2024])
    p.add_argument("--competition", help="only this competition's innings are scored")
    args = p.parse_args()
    trained = load_trained(args.model)
    cfg = load_data_config(args.data)
    phases = PhaseRules.from_config(OmegaConf.to_container(cfg.phases, resolve=True))
    tables = config_tables(args.data, args.sources)
    d = tables.deliveries
    sim = Simulator.build(trained.model, trained.encoder, phases, d)
    shown = d[d["season"].isin(args.seasons)]
    if args.competition:
        shown = shown[shown["competition"].astype(str) == args.competition]
    print(markdown_table(bowler_rule_fit(sim, shown, tables.matches), 4))


if __name__ == "__main__":
    main()
