"""The laws of the game, checked against what real innings did."""

from __future__ import annotations

import pandas as pd

from cricket_attn.laws import crease_after, dismissed


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


def test_an_innings_is_over_by_one_rule_on_numbers_arrays_and_tensors(deliveries):
    """No real ball is bowled in an innings the rule calls over, and the innings the rule calls over after
    their last ball are those the Laws ended (all out, out of balls, the target reached): the same answer
    on plain numbers, NumPy arrays and tensors."""
    import math

    import numpy as np
    import torch

    from cricket_attn.data.features import innings_balls
    from cricket_attn.laws import MAX_WICKETS, innings_over

    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    by = d.groupby(["match_id", "innings"], observed=True, sort=False)
    before = [by[c].cumsum() - d[c] for c in ("runs_total", "wicket_count")]
    legal = d["legal_ball_index"].to_numpy()
    balls = innings_balls(d)
    target = d["target_runs"].astype("Float64").fillna(np.inf).to_numpy(dtype=float)
    assert not innings_over(before[0].to_numpy(), before[1].to_numpy(), legal, balls, target).any()
    last = by.tail(1).index
    runs, wickets = by["runs_total"].sum().to_numpy(), by["wicket_count"].sum().to_numpy()
    after = legal[last] + d["is_legal"].to_numpy(dtype=int)[last]
    ended = innings_over(runs, wickets, after, balls[last], target[last])
    # 36 of the fixtures' 40 innings end by the Laws; the other four stopped short: 1178424's two by rain (no
    # result), 1136566's first at 107 balls by rain (a DLS chase), and 335987's first after 20 overs of which one
    # had five legal balls (the umpire's miscount): 119 legal balls, by the file.
    assert (len(last), int(ended.sum())) == (40, 36) and (wickets[~ended] < MAX_WICKETS).all()
    as_tensors = innings_over(
        *(torch.as_tensor(np.asarray(a, dtype=float)) for a in (runs, wickets, after, balls[last], target[last]))
    )
    assert as_tensors.tolist() == ended.tolist()
    one = [
        bool(innings_over(*(float(a[i]) for a in (runs, wickets, after, balls[last], target[last]))))
        for i in range(len(runs))
    ]
    assert one == ended.tolist() and innings_over(0, MAX_WICKETS, 0, 120, math.inf)


def test_who_is_out_and_who_only_left_the_crease():
    """Two departures on one ball (every league has five "bowled;retired hurt"): each is the batter's it names; a
    batter retired hurt or retired not out left the crease but is not out, one retired out is out."""
    d = pd.DataFrame(
        {
            "batter": ["A", "A", "C", "E"],
            "non_striker": ["B", "B", "D", "F"],
            "player_out": ["A;B", "B", None, "F"],
            "wicket_kind": ["bowled;retired hurt", "retired not out", None, "retired out"],
        }
    )
    left, out = dismissed(d), dismissed(d, retirements=False)
    assert [list(x) for x in left] == [[True, False, False, False], [True, True, False, True]]
    assert [list(x) for x in out] == [[True, False, False, False], [False, False, False, True]]
