"""The laws of the game, checked against what real innings did."""

from __future__ import annotations

from cricket_attn.laws import crease_after


def test_strike_rotation_predicts_the_next_striker(deliveries):
    d = deliveries.reset_index(drop=True)
    striker, _, _ = crease_after(d, incoming="<unk>")
    same_innings = (d["match_id"].to_numpy()[:-1] == d["match_id"].to_numpy()[1:]) & (
        d["innings"].to_numpy()[:-1] == d["innings"].to_numpy()[1:]
    )
    judged = same_innings & (d["wicket_count"].to_numpy()[:-1] == 0)
    hit = striker[:-1][judged] == d["batter"].astype(str).to_numpy()[1:][judged]
    assert judged.sum() > 4000 and hit.mean() >= 0.99
