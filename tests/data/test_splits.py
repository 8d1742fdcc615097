"""The default time split: train up to 2023, validate on 2024, test on 2025-2026."""

from __future__ import annotations

import pytest

from cricket_attn.data.splits import SPLITS, SeasonSplit


def assert_time_ordered(parts):
    ids = {name: set(part["match_id"]) for name, part in parts.items()}
    assert not ids["train"] & ids["validation"] and not ids["train"] & ids["test"]
    assert not ids["validation"] & ids["test"]
    assert parts["train"]["date"].max() < parts["validation"]["date"].min()
    assert parts["validation"]["date"].max() < parts["test"]["date"].min()


def test_default_split_on_fixtures(data_config, deliveries):
    split = SeasonSplit.from_config(data_config.split)
    assert split == SeasonSplit(2023, (2024,), (2025, 2026))
    parts = split.split(deliveries)
    assert set(parts) == set(SPLITS)
    assert sum(len(p) for p in parts.values()) == len(deliveries)
    assert sorted(parts["test"]["match_id"].unique()) == ["1473438", "1473439", "1473440", "1527674", "1527675"]
    assert_time_ordered(parts)


def test_overlapping_seasons_are_refused():
    with pytest.raises(ValueError, match="no later season leaks"):
        SeasonSplit(2024, (2024,), (2025,))
    with pytest.raises(ValueError, match="no later season leaks"):
        SeasonSplit(2022, (2025,), (2024,))


@pytest.mark.slow
def test_default_split_on_the_ipl_archive(data_config, ipl_tables):
    parts = SeasonSplit.from_config(data_config.split).split(ipl_tables.deliveries)
    assert_time_ordered(parts)
    assert parts["test"]["match_id"].nunique() == 144
    assert int((~parts["test"]["is_super_over"]).sum()) == 33_823
