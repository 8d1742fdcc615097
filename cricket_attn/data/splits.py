"""The time split: train on early seasons, choose on the next, test on the latest."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class SeasonSplit:
    """Seasons up to `train_until` train; `validation` and `test` list later seasons. Others are unused."""

    train_until: int
    validation: tuple[int, ...]
    test: tuple[int, ...]

    def __post_init__(self):
        if not self.validation or not self.test:
            raise ValueError("split: validation and test need at least one season each")
        if not self.train_until < min(self.validation) <= max(self.validation) < min(self.test):
            raise ValueError(
                f"split: seasons must run train (<= {self.train_until}) < validation {list(self.validation)} "
                f"< test {list(self.test)}, so no later season leaks into an earlier split"
            )

    @classmethod
    def from_config(cls, cfg: Mapping) -> SeasonSplit:
        return cls(int(cfg["train_until"]), tuple(map(int, cfg["validation"])), tuple(map(int, cfg["test"])))

    def label(self, seasons: pd.Series) -> pd.Series:
        """'train', 'validation', 'test' or missing, per row, from its season."""
        labels = pd.Series(pd.NA, index=seasons.index, dtype="object")
        labels[seasons <= self.train_until] = "train"
        labels[seasons.isin(self.validation)] = "validation"
        labels[seasons.isin(self.test)] = "test"
        return labels

    def split(self, deliveries: pd.DataFrame) -> dict[str, pd.DataFrame]:
        labels = self.label(deliveries["season"])
        return {name: deliveries[labels == name].reset_index(drop=True) for name in SPLITS}


def season_range(d: pd.DataFrame) -> str:
    """The seasons of `d` as people write them: `2008-2023`, or `2024` (`no seasons` when empty)."""
    if d.empty:
        return "no seasons"
    first, last = int(d["season"].min()), int(d["season"].max())
    return str(first) if first == last else f"{first}-{last}"
