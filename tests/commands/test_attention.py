"""What the heads look at: the report finds heads built by hand, and the pictures and CLI work on real matches."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from cricket_attn.commands.attention import main, parse_ball
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.inference.attention import (
    AGE_BANDS,
    CATEGORIES,
    category_masks,
    head_report,
    history_report,
    innings_attention,
    report_table,
)
from cricket_attn.inference.attention_pictures import draw_match
from cricket_attn.model import CricketTransformer, ModelConfig
from tests.conftest import FIXTURES

# Radians per legal ball of the sinusoidal part's second pair of channels at width 4 (10000^(-2/4)): one
# turn is 628 balls, longer than an innings.
ANGLE = 0.01


def hand_made_heads(deliveries: pd.DataFrame) -> tuple[CricketTransformer, SequenceEncoder]:
    """One layer, two heads, weights set by hand: the input of ball t is its legal-ball index as an
    angle (dims 0-3, from the sinusoidal part's slow pair of channels) plus its bowler as a random unit
    vector (dims 4-31), each written as [v, -v], so LayerNorm only rescales it. Head 0's query turns the
    angle back one ball, so it matches the key of the previous legal ball; head 1's query and key are the
    bowler vector, so it matches the same bowler's balls (and the ball itself)."""
    encoder = SequenceEncoder.fit(deliveries, min_count=1)
    cfg = ModelConfig(
        **{**encoder.model_dims(), "numeric_quantiles": None},
        numeric_embedding="mlp",
        numeric_hidden=None,
        d_model=32,
        n_heads=2,
        n_layers=1,
        dropout=0.0,
        positional_parts=("absolute",),
        positional_dim=4,
    )
    model = CricketTransformer(cfg).eval()
    C, hd = cfg.d_model, cfg.d_model // cfg.n_heads
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.blocks[0].ln1.weight.fill_(1.0)
        # The part's channels are sin(p), cos(p), sin(ANGLE p), cos(ANGLE p): the projection takes the slow pair.
        assert torch.allclose(
            model.position.absolute[:, 2], torch.sin(ANGLE * torch.arange(cfg.max_balls).float()), atol=1e-5
        )
        proj = model.position.proj.weight  # (C, 4)
        proj[0, 3], proj[1, 2], proj[2, 3], proj[3, 2] = 1.0, 1.0, -1.0, -1.0
        g = torch.Generator().manual_seed(0)
        u = torch.randn(cfg.n_bowlers, 14, generator=g)
        u = u / u.norm(dim=1, keepdim=True)
        model.bowler.weight[:, 4:18], model.bowler.weight[:, 18:32] = u, -u
        w = model.blocks[0].attn.qkv.weight  # rows: queries, keys, values; head h takes rows h*hd .. (h+1)*hd
        turn, scale = torch.tensor([[math.cos(ANGLE), math.sin(ANGLE)], [-math.sin(ANGLE), math.cos(ANGLE)]]), 2e5
        w[0:2, 0:2] = scale * turn  # head 0 query: the angle one ball back
        w[C : C + 2, 0:2] = torch.eye(2)  # head 0 key: the angle
        w[hd : hd + 14, 4:18] = 50 * torch.eye(14)  # head 1 query: the bowler
        w[C + hd : C + hd + 14, 4:18] = torch.eye(14)  # head 1 key: the bowler
    return model, encoder


def test_report_finds_the_previous_ball_head_and_the_bowler_head(deliveries):
    model, encoder = hand_made_heads(deliveries)
    report = head_report(model, encoder, deliveries).set_index("head")
    prev, bowler = report.loc[0], report.loc[1]
    # Head 0 looks at the previous legal ball: the previous delivery, except just after a wide or no-ball.
    assert prev["previous_ball"] > 0.9 and prev["previous_ball_ratio"] > 10
    assert prev["specialises_in"].startswith("previous_ball") and prev["spread"] < 0.1  # one ball: entropy near 0
    assert prev["same_bowler"] < 0.01 and prev["same_bowler_ratio"] < 0.1  # not the bowler's earlier overs
    # Head 1 spreads over the bowler's balls: his earlier overs, this over and the ball itself.
    assert bowler["same_bowler"] > 0.4 and bowler["same_bowler_ratio"] > 3 and "same_bowler" in bowler["specialises_in"]
    assert bowler[["self", "previous_ball", "rest_of_over", "same_bowler"]].sum() > 0.95
    assert bowler["previous_ball"] < prev["previous_ball"] / 3
    assert bowler["same_batter_ratio"] < 2  # (the previous ball is often the same batter's: no such test for head 0)
    # A head that attends evenly is reported as such: every ratio 1 on a fresh model with zero queries.
    with torch.no_grad():
        model.blocks[0].attn.qkv.weight.zero_()
    even = head_report(model, encoder, deliveries)
    ratios = even[[f"{c}_ratio" for c in CATEGORIES]].to_numpy()
    assert np.allclose(ratios, 1.0, atol=1e-4) and (even["specialises_in"] == "nothing (near uniform)").all()
    assert np.allclose(even["distance"], even["distance_uniform"], rtol=1e-4) and np.allclose(even["spread"], 1.0)
    table = report_table(report.reset_index())
    assert table.count("\n") == 2 + 1 + 2 and "previous_ball" in table and "after wicket" in table


def test_category_masks_on_a_real_innings(deliveries):
    innings = deliveries[(deliveries["match_id"] == deliveries["match_id"].iloc[0]) & (deliveries["innings"] == 1)]
    balls = innings.reset_index(drop=True)
    masks = category_masks(balls)
    T = len(balls)
    for name, m in masks.items():
        assert m.shape == (T, T) and not np.triu(m, k=1).any(), name  # nothing after the ball
    t = T - 1
    bowler, over = balls["bowler"].astype(str).to_numpy(), balls["over"].to_numpy()
    assert masks["same_bowler"][t].sum() == ((bowler[:t] == bowler[t]) & (over[:t] != over[t])).sum() > 0
    assert masks["previous_ball"][t, t - 1] and masks["previous_ball"][t].sum() == 1
    same_over = np.flatnonzero(balls["over"].to_numpy()[: t - 1] == balls["over"].iloc[t])
    assert np.array_equal(np.flatnonzero(masks["rest_of_over"][t]), same_over)
    assert masks["first_ball"][:, 0].sum() == T - 1
    # Position s reads ball s - 1's outcome: after a boundary are the positions just after a four or six.
    boundaries = np.flatnonzero(balls["outcome"].astype(str).isin(["4", "6"]).to_numpy()[: t - 1])
    assert np.array_equal(np.flatnonzero(masks["after_boundary"][t]), boundaries + 1) and len(boundaries)


def test_innings_weights_cover_every_regular_innings(deliveries):
    model, encoder = hand_made_heads(deliveries)
    innings = list(innings_attention(model, encoder, deliveries))
    regular = deliveries[~deliveries["is_super_over"].astype(bool)]
    assert len(innings) == regular.groupby(["match_id", "innings"], observed=True).ngroups
    for inn in innings[:5]:
        T = len(inn.balls)
        assert inn.weights.shape == (1, 2, T, T)
        assert np.allclose(inn.weights.sum(-1), 1.0, atol=1e-5)
        assert inn.balls["over"].is_monotonic_increasing


def test_pictures_of_a_real_match(deliveries, tmp_path):
    model, encoder = hand_made_heads(deliveries)
    match = deliveries[deliveries["match_id"] == deliveries["match_id"].iloc[0]]
    drawn = draw_match(model, encoder, match, tmp_path, innings=2, ball=(10, 1))
    assert [p.name for p in drawn] == [
        f"{match['match_id'].iloc[0]}_innings2.png",
        f"{match['match_id'].iloc[0]}_innings2_ball10.1.png",
    ]
    assert all(p.stat().st_size > 20_000 for p in drawn)  # drawn, not blank
    with pytest.raises(ValueError, match="has no ball 30.1"):
        draw_match(model, encoder, match, tmp_path / "none", innings=2, ball=(30, 1))
    # A ball the first innings has and the chase does not: refused before either innings is drawn.
    last_of_first = match[match["innings"] == 1].iloc[-1]
    ball = (int(last_of_first["over"]), int(last_of_first["ball_in_over"]))
    (tmp_path / "none").mkdir()
    with pytest.raises(ValueError, match=f"has no ball {ball[0]}.{ball[1]}"):
        draw_match(model, encoder, match, tmp_path / "none", ball=ball)
    assert list((tmp_path / "none").iterdir()) == []
    assert parse_ball("15.3") == (15, 3)
    with pytest.raises(ValueError, match="give OVER.BALL"):
        parse_ball("15")


def test_cli_draws_and_reports(tracked_run, tmp_path, capsys):
    checkpoint = tracked_run["results"]["checkpoint"]
    match = "1473438"
    assert (
        main(
            [
                "--model",
                checkpoint,
                "--out",
                str(tmp_path),
                "--match",
                match,
                "--innings",
                "2",
                "--ball",
                "5.1",
                "--report",
                str(FIXTURES),
            ]
        )
        == 0
    )
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["1473438_innings2.png", "1473438_innings2_ball5.1.png", "heads.csv", "heads.md"]
    heads = pd.read_csv(tmp_path / "heads.csv")
    assert len(heads) == 2 and set(heads["head"]) == {0, 1}  # the tiny model: one layer, two heads
    assert main(["--model", checkpoint, "--out", str(tmp_path), "--ball", "5.1", str(FIXTURES)]) == 2
    assert "--innings and --ball need --match" in capsys.readouterr().err
    assert main(["--model", checkpoint, "--out", str(tmp_path), "--match", "999", str(FIXTURES)]) == 2
    assert "--match 999: no such match" in capsys.readouterr().err


def test_training_run_logs_the_head_report_and_pictures(tracked_run):
    from mlflow import MlflowClient

    client = MlflowClient(tracked_run["uri"])
    run = client.get_run(tracked_run["run_id"])
    assert {f"heads/0.{h}/{c}" for h in (0, 1) for c in CATEGORIES} <= set(run.data.metrics)
    logged = {a.path for a in client.list_artifacts(tracked_run["run_id"], "attention")}
    assert "attention/heads.md" in logged
    assert any(p.endswith("_innings1.png") for p in logged) and any(p.endswith("_innings2.png") for p in logged)


def test_cli_refuses_an_out_that_is_a_file_and_an_innings_not_played(tracked_run, tmp_path, capsys):
    """Both before anything is drawn: one line, exit status 2, nothing written."""
    checkpoint = tracked_run["results"]["checkpoint"]
    (tmp_path / "out").write_text("a file, not a folder")
    assert main(["--model", checkpoint, "--out", str(tmp_path / "out"), str(FIXTURES / "1473438.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"cricket-attn-attention: --out {tmp_path / 'out'}: is a file; give a folder (made if missing)"]
    argv = ["--model", checkpoint, "--out", str(tmp_path / "pics"), "--match", "1473438", "--innings", "5"]
    assert main([*argv, str(FIXTURES)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["cricket-attn-attention: --innings 5: match 1473438 has no such innings (it has 1, 2)"]
    assert not (tmp_path / "pics").exists()


def test_the_history_report_gives_each_competition_and_age_its_share_of_attention(deliveries):
    """Readers whose query is zero spread each ball's attention evenly over the "nothing" key and the
    balls its player's history holds: the report gives every competition and age band exactly its share
    of the balls held. A reader whose "nothing" key outscores every ball reads nothing."""
    d = deliveries.copy()
    other = d["match_id"].isin(d["match_id"].unique()[::3])
    d["competition"] = np.where(other, "SA20", d["competition"].astype(str))  # two competitions
    encoder = SequenceEncoder.fit_encode(d, min_count=1, history_balls=8)[0]
    model = CricketTransformer(ModelConfig(**encoder.model_dims(), d_model=8, n_heads=2, n_layers=1)).eval()
    readers = [model.batter_history, model.bowler_history]
    with torch.no_grad():
        for reader in readers:
            reader.q.weight.zero_()
            reader.q.bias.zero_()
    report = history_report(model, encoder, d)
    assert set(report["reader"]) == {"batter_history", "bowler_history"}
    for _, part in report.groupby("reader"):
        for kind in ("competition", "age"):
            rows = part[part["kind"] == kind]
            assert rows["held"].sum() == pytest.approx(1) and rows["read"].sum() == pytest.approx(1)
            assert np.allclose(rows["read"], rows["held"], atol=1e-6) and np.allclose(rows["ratio"], 1, atol=1e-5)
        assert set(part.loc[part["kind"] == "competition", "value"]) == {"SA20", "Indian Premier League"}
        assert set(part.loc[part["kind"] == "age", "value"]) <= {label for _, label in AGE_BANDS}
        (nothing,) = part[part["kind"] == "nothing"].to_dict("records")
        assert 1 / 9 - 1e-6 < nothing["read"] < 1 and 0 < nothing["held"] < 1  # the first match's players have none
    with torch.no_grad():
        for reader in readers:
            reader.kv.weight.zero_()
            reader.kv.bias.zero_()  # every ball's key is zero
            reader.q.bias.fill_(3.0)
            reader.none[0].fill_(3.0)  # the "nothing" key scores 3 * 3 * 4 / 2 = 18 against 0
    report = history_report(model, encoder, d)
    assert (report.loc[report["kind"] == "nothing", "read"] > 0.999).all()
