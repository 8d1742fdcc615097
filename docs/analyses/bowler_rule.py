"""Who bowls: the bowler rule's fit to the real bowler of every over after the first, with each player's usage
counted from his own last matches (for whichever side) against his side's last matches, per season
(`realism.bowler_rule_fit`: the mean log-likelihood of the real bowler per over, against drawing evenly).

    python docs/analyses/bowler_rule.py --model <checkpoint> --seasons 2023 2024 2025 2026

The model only sets up the innings (the rule does not read it). Prints one table per way of counting.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from omegaconf import OmegaConf

from cricket_attn.config import load_data_config, project_path
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.data.sources import configured_sources
from cricket_attn.inference.serving import load_trained
from cricket_attn.metrics import markdown_table
from cricket_attn.simulation.realism import bowler_rule_fit
from cricket_attn.simulation.rollout import Simulator
from cricket_attn.simulation.rules import BowlingUsage


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--data", default="ipl")
    p.add_argument("--seasons", type=int, nargs="+", default=[2023, 2024])
    p.add_argument("--competition", help="only this competition's innings are scored")
    args = p.parse_args()
    trained = load_trained(args.model)
    cfg = load_data_config(args.data)
    phases = PhaseRules.from_config(OmegaConf.to_container(cfg.phases, resolve=True))
    tables = load_tables(configured_sources(cfg.sources), phases, project_path(cfg.data_dir))
    d = tables.deliveries
    sim = Simulator.build(trained.model, trained.encoder, phases, d)
    shown = d[d["season"].isin(args.seasons)]
    if args.competition:
        shown = shown[shown["competition"].astype(str) == args.competition]
    for by in ("player", "team"):
        usage = BowlingUsage.build(d, by=by)
        print(f"\nusage by {by}:\n")
        print(markdown_table(bowler_rule_fit(replace(sim, usage=usage), shown, tables.matches), 4))


if __name__ == "__main__":
    main()
