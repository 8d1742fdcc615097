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


def test_the_bowler_is_credited_only_with_his_dismissals(deliveries):
    from cricket_attn.laws import bowler_wickets

    wickets = deliveries[deliveries["outcome"].eq("wicket")].reset_index(drop=True)
    credited = bowler_wickets(wickets)
    kind = wickets["wicket_kind"].astype(str)
    # The fixtures hold 19 run outs and one real "retired out" (a batter retired tactically): neither is his.
    assert kind.eq("run out").sum() == 19 and kind.eq("retired out").sum() == 1
    assert credited.tolist() == (~kind.isin(["run out", "retired out"])).tolist()
    # The same real wicket, recorded as each kind the Laws do not give the bowler, and as a compound.
    one = wickets.iloc[[0] * 6].copy()
    one["wicket_kind"] = [
        "retired out",
        "obstructing the field",
        "handled the ball",
        "hit the ball twice",
        "run out;retired out",
        "bowled;retired hurt",
    ]
    assert bowler_wickets(one).tolist() == [False] * 5 + [True]
    assert not bowler_wickets(deliveries[deliveries["outcome"].ne("wicket")]).any()
