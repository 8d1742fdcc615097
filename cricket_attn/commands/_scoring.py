"""What the commands that run a trained model over match files (predict, simulate) share: their arguments and
the summary they print (a kit of the top floor, not a script; what every command shares is `cricket_attn.cli`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from cricket_attn.cli import add_tracking, named_list
from cricket_attn.inference.recent import BY_MODEL, STRENGTH, strength


@dataclass
class CommandSummary:
    """What a scoring command did, printed at its end: the model, what it made, who and what it did not know."""

    matches: int = 0
    # What the model has no embedding of its own for (`unknown_to`): batters, bowlers, venues, competitions.
    unknown: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    out: str = ""
    model: str = ""
    seconds: float = 0.0
    known_from: str = ""  # where the earlier matches the model's records and histories read came from
    notes: list[str] = field(default_factory=list)  # what was done to the data on the way, a line each

    def counts(self) -> list[str]:
        """What the command made, a line each (each command says its own)."""
        return []

    def __str__(self) -> str:
        lines = [
            f"model:              {self.model}",
            *([f"earlier matches:    {self.known_from}"] if self.known_from else []),
            *(f"note:               {note}" for note in self.notes),
            *self.counts(),
            *(named_list(f"{what} unknown to the model", names) for what, names in self.unknown.items()),
            f"skipped:            {len(self.skipped)}",
        ]
        lines += [f"  {reason}" for reason in self.skipped]
        lines.append(f"written:            {self.out} ({self.seconds:.2f} s)")
        return "\n".join(lines)


def scoring_parser(
    prog: str, description: str, history: str, recent_level: float | None, sources: str = "+"
) -> argparse.ArgumentParser:
    """The arguments the commands that run a model over match files share; `recent_level`, the command's
    default strength for the league's recent level (0: off; None: by the model, `level_by_default`);
    `sources`, how many match sources it takes ("*": none, where it can write a match itself)."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--model", required=True, help="MLflow model URI (runs:/..., models:/name@alias) or checkpoint")
    p.add_argument("--out", required=True, type=Path, help="output file, .parquet or .csv")
    p.add_argument("--strict", action="store_true", help="fail if any match file has to be skipped")
    p.add_argument("--data", default="ipl", help="data config in conf/data/ for the phase rules")
    add_tracking(p, experiment=False)
    p.add_argument("--history", action="append", help=history)
    p.add_argument(
        "--recent-level",
        type=strength(),
        default=recent_level,
        metavar="STRENGTH",
        help="learn the league's level from the known matches (the sources and --history data) since the "
        f"model's training seasons played before each match (cricket_attn.inference.recent), pulled to zero with "
        f"this strength ({STRENGTH:g} chosen on 2024; default: {BY_MODEL if recent_level is None else '%(default)g'})"
        "; 0: the model as it is",
    )
    p.add_argument(
        "--form",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="tilt each ball by its batter's and bowler's form in the known matches since the model's training "
        "seasons played before its match (cricket_attn.inference.form; default: %(default)s)",
    )
    p.add_argument("sources", nargs=sources, help="Cricsheet zips, folders or match files")
    return p
