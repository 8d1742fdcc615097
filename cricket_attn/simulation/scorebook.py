"""From an outcome class to what goes in the scorebook.

A class is not a number of runs: a wide may go for five, a "bye" may be four leg-byes, a no-ball may be hit
for six, "3" also holds the rare five, and a wicket has a dismissed batter (the striker, or for some run-outs
the non-striker) and may come with runs. The scorebook keeps, for each class, every distinct delivery of the
training seasons as an entry with how often it occurred, and samples entries in those proportions.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd
import torch

from cricket_attn.laws import OUTCOMES
from cricket_attn.simulation.state import FLAG_FIELDS, Delivery

ENTRY_FIELDS = tuple(f.name for f in fields(Delivery))


@dataclass
class Scorebook:
    """`entries` (E, len(ENTRY_FIELDS)) distinct deliveries; `probability` (classes, E): each entry's share
    of its class (zero outside it)."""

    entries: torch.Tensor
    probability: torch.Tensor
    runs: torch.Tensor  # (classes,) the mean runs one delivery of each class is worth (`class_values`)

    @classmethod
    def fit(cls, deliveries: pd.DataFrame) -> Scorebook:
        """From the regular innings of `deliveries` (the model's training seasons)."""
        d = deliveries[~deliveries["is_super_over"].astype(bool)]
        ball = Delivery.from_table(d)
        table = pd.DataFrame({f: getattr(ball, f).numpy().astype(np.int64) for f in ENTRY_FIELDS})
        counts = table.value_counts().sort_index()
        entries = torch.as_tensor(np.array(counts.index.tolist(), dtype=np.int64))
        n = torch.as_tensor(np.array(counts.to_numpy()), dtype=torch.float64)
        outcome = entries[:, ENTRY_FIELDS.index("outcome")]
        probability = torch.zeros(len(OUTCOMES), len(entries), dtype=torch.float64)
        probability[outcome, torch.arange(len(entries))] = n
        totals = probability.sum(1, keepdim=True)
        missing = [OUTCOMES[c] for c in range(len(OUTCOMES)) if totals[c] == 0]
        if missing:
            raise ValueError(f"the scorebook's deliveries have no ball of class {missing}: too few to fit it")
        return cls(entries, probability / totals, torch.as_tensor(class_values(d)["runs"].to_numpy(copy=True)))

    def sample(self, outcome: torch.Tensor, generator: torch.Generator | None = None) -> Delivery:
        """One scorebook entry per simulation, drawn among its outcome class's entries."""
        pick = torch.multinomial(self.probability[outcome], 1, generator=generator)[:, 0]
        chosen = self.entries[pick]
        values = {f: chosen[:, i] for i, f in enumerate(ENTRY_FIELDS)}
        for f in FLAG_FIELDS:
            values[f] = values[f].bool()
        return Delivery(**values)


def class_values(deliveries: pd.DataFrame) -> pd.DataFrame:
    """Per outcome class of the regular innings of `deliveries`: how many, and the mean runs and wickets one
    such delivery is worth (what the scorebook samples, e.g. a wide's runs with its fours and stumpings). The
    simulator's values of the classes; `laws.OUTCOME_RUNS` is each class's nominal value, which predict's
    expected runs use so that they do not depend on the seasons a model was fitted on."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)]
    grouped = d.groupby(pd.Categorical(d["outcome"], categories=OUTCOMES), observed=False)
    return pd.DataFrame(
        {"deliveries": grouped.size(), "runs": grouped["runs_total"].mean(), "wickets": grouped["wicket_count"].mean()}
    ).rename_axis("outcome")
