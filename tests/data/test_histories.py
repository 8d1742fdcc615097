"""Players' histories hold only balls of earlier days, the last K of them, and never move with later matches."""

from __future__ import annotations

import numpy as np
import pytest

from cricket_attn.data.features import entity_key
from cricket_attn.data.histories import NO_BALL, ROLES, HistoryStore, days, sequence_histories


def brute_force(deliveries, role: str, player: str, day: int, k: int):
    """The player's last k balls in the role before `day`, by plain pandas: (day, outcome) pairs."""
    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    mine = d[(entity_key(d, role) == player) & (days(d["date"]) < day)]
    return list(zip(days(mine["date"])[-k:], mine["outcome"].cat.codes.to_numpy()[-k:]))


@pytest.mark.parametrize("role", ROLES)
def test_history_is_the_last_k_balls_of_earlier_days(deliveries, role):
    store = HistoryStore.build(deliveries, role)
    assert len(store) == int((~deliveries["is_super_over"].astype(bool)).sum())
    last = deliveries[deliveries["date"] == deliveries["date"].max()]
    players = list(dict.fromkeys(entity_key(last, role)))
    day = days(last["date"])[0]
    k = 40
    index = store.before(np.array(players, dtype=object), np.full(len(players), day), k)
    with_history = 0
    for player, row in zip(players, index):
        expected = brute_force(deliveries, role, player, day, k)
        got = [(store.tokens["day"][i], store.tokens["outcome"][i]) for i in row if i != NO_BALL]
        assert got == expected, player
        assert (row[: k - len(got)] == NO_BALL).all()  # right-aligned: the latest ball is last
        with_history += bool(got)
    assert with_history >= 3  # the fixtures' 2026 players have played in earlier fixture matches


@pytest.mark.parametrize("role", ROLES)
def test_a_later_match_never_changes_an_earlier_history(deliveries, role):
    dates = sorted(deliveries["date"].unique())
    cut = dates[len(dates) // 2]
    earlier = deliveries[deliveries["date"] <= cut]
    full, part = HistoryStore.build(deliveries, role), HistoryStore.build(earlier, role)
    slot_full, index_full, listed_full = sequence_histories(earlier, full, 32)
    slot_part, index_part, listed_part = sequence_histories(earlier, part, 32)
    assert np.array_equal(slot_full, slot_part) and listed_full.equals(listed_part)
    for column in ("outcome", "opponent", "phase", "season", "day"):
        a = np.where(index_full == NO_BALL, None, full.tokens[column][index_full].astype(object))
        b = np.where(index_part == NO_BALL, None, part.tokens[column][index_part].astype(object))
        assert (a == b).all(), column
    assert (index_full != NO_BALL).any()


def test_sequence_histories_give_each_ball_its_players_slot(deliveries):
    store = HistoryStore.build(deliveries, "bowler")
    match = deliveries[deliveries["match_id"] == deliveries["match_id"].iloc[-1]]
    regular = match[~match["is_super_over"].astype(bool)]
    slot, index, listed = sequence_histories(regular, store, 16)
    assert len(slot) == len(regular) and index.shape == (len(listed), 16)
    innings = regular["innings"].to_numpy()
    for inn in np.unique(innings):
        bowlers = list(dict.fromkeys(entity_key(regular[innings == inn], "bowler")))
        mine = listed[listed["sequence"] == listed["sequence"].unique()[inn - 1]]
        assert list(mine["player"]) == bowlers
        assert list(mine["slot"]) == list(range(len(bowlers)))
    # Every ball's slot points at its own bowler.
    keys = entity_key(regular, "bowler")
    ngroup = regular.groupby(["match_id", "innings"], sort=False, observed=True).ngroup().to_numpy()
    lookup = {(r.sequence, r.slot): r.player for r in listed.itertuples()}
    assert all(lookup[(g, s)] == k for g, s, k in zip(ngroup, slot, keys))


def test_unknown_player_has_an_empty_history(deliveries):
    store = HistoryStore.build(deliveries, "batter")
    index = store.before(np.array(["nobody"], dtype=object), np.array([30000]), 8)
    assert (index == NO_BALL).all()
    with pytest.raises(ValueError, match="role must be one of"):
        HistoryStore.build(deliveries, "keeper")
