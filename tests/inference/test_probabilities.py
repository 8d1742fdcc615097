"""A model's outcome distribution for every delivery (cricket_attn/inference/probabilities.py), on the fixtures'
real balls with the untrained tiny model of `fixture_simulator` (what is checked does not depend on its skill)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cricket_attn.inference.probabilities import DELIVERY_COLUMNS, model_config, model_reach, score_deliveries
from cricket_attn.laws import OUTCOME_RUNS
from cricket_attn.metrics import PROB_COLUMNS, calibrated
from cricket_attn.model import CricketTransformer, Ensemble


@pytest.fixture(scope="module")
def scored(fixture_simulator, deliveries):
    return score_deliveries(fixture_simulator.model, fixture_simulator.encoder, deliveries)


def test_every_regular_delivery_is_scored_once_in_table_order_with_a_distribution(scored, deliveries):
    regular = deliveries[~deliveries["is_super_over"]].reset_index(drop=True)
    assert len(regular) < len(deliveries)  # 1216493's super overs are not modelled
    assert list(scored.columns) == [*DELIVERY_COLUMNS, *PROB_COLUMNS, "expected_runs"]
    for column in DELIVERY_COLUMNS:
        assert scored[column].astype(str).tolist() == regular[column].astype(str).tolist(), column
    p = scored[list(PROB_COLUMNS)].to_numpy()
    assert (p >= 0).all() and (p <= 1).all() and np.abs(p.sum(axis=1) - 1).max() < 1e-12
    runs = scored["expected_runs"].to_numpy()
    assert (runs >= 0).all() and (runs <= 6).all()
    np.testing.assert_allclose(runs, p @ OUTCOME_RUNS)


def test_a_balls_probabilities_depend_on_neither_the_batches_nor_the_order_of_the_matches(
    fixture_simulator, deliveries, scored
):
    """Three matches given last first and scored one innings at a time: the rows come back in the order
    given, each ball with the distribution it had in the whole table scored 256 innings at a time."""
    later = ["1527675", "1527674", "1473440"]
    table = deliveries.set_index("match_id").loc[later].reset_index()
    one_by_one = score_deliveries(fixture_simulator.model, fixture_simulator.encoder, table, batch_size=1)
    assert one_by_one["match_id"].astype(str).unique().tolist() == later
    keys = ["match_id", "innings", "delivery_index"]
    whole = scored.set_index(keys).loc[one_by_one.set_index(keys).index]
    np.testing.assert_allclose(
        one_by_one[list(PROB_COLUMNS)].to_numpy(), whole[list(PROB_COLUMNS)].to_numpy(), atol=1e-6
    )


def test_a_calibrated_model_scores_what_the_calibration_fit_assumes(fixture_simulator, deliveries, scored):
    """The same weights with a temperature and a wicket offset in their settings score each ball as
    `metrics.calibrated` makes of the plain model's distribution (what `fit_calibration` fits); temperature 1 and
    no offset change nothing. An ensemble of the two scores their mean, with its first member's settings."""
    plain = fixture_simulator.model
    p = scored[list(PROB_COLUMNS)].to_numpy()
    np.testing.assert_allclose(calibrated(p, 1.0, 0.0), p, atol=1e-12)
    hot = CricketTransformer(replace(plain.cfg, temperature=1.4, wicket_offset=-0.3)).eval()
    hot.load_state_dict(plain.state_dict())
    regular = deliveries[~deliveries["is_super_over"]]
    match = regular[regular["match_id"] == "1082591"]
    ours = p[(scored["match_id"] == "1082591").to_numpy()]
    hot_p = score_deliveries(hot, fixture_simulator.encoder, match)[list(PROB_COLUMNS)].to_numpy()
    np.testing.assert_allclose(hot_p, calibrated(ours, 1.4, -0.3), atol=1e-5)
    assert np.abs(hot_p - ours).max() > 1e-3
    both = Ensemble([plain, hot]).eval()
    assert model_config(both) is plain.cfg and model_config(hot) is hot.cfg
    mean = score_deliveries(both, fixture_simulator.encoder, match)[list(PROB_COLUMNS)].to_numpy()
    np.testing.assert_allclose(mean, (ours + hot_p) / 2, atol=1e-6)


def test_nothing_to_score_gives_an_empty_table_with_every_column(fixture_simulator, deliveries):
    for table in (deliveries.iloc[:0], deliveries[deliveries["is_super_over"]]):
        out = score_deliveries(fixture_simulator.model, fixture_simulator.encoder, table)
        assert out.empty and list(out.columns) == [*DELIVERY_COLUMNS, *PROB_COLUMNS, "expected_runs"]


def test_a_table_shorter_than_an_innings_names_the_matches_that_reach_past_it(fixture_simulator, deliveries):
    """Every fixture T20 fits the model's tables. With room for 119 legal balls: the matches with an innings
    of 120 named by it, not 335987 (119 in its first, by an over of five) nor the rain-cut ones; played to
    their end as scheduled, every match could reach 120."""
    cfg = model_config(fixture_simulator.model)
    assert model_reach(cfg, deliveries) == {} and model_reach(cfg, deliveries, scheduled=True) == {}
    short = replace(cfg, max_balls=119)
    regular = deliveries[~deliveries["is_super_over"]]
    legal = regular.groupby(["match_id", "innings"])["is_legal"].sum()
    full = legal[legal >= 120].reset_index().groupby("match_id")["innings"].min()
    found = model_reach(short, deliveries)
    assert found == {
        m: f"innings {i} reaches 120 legal balls, more than the model's tables hold (model.max_balls=119; "
        "it was trained on T20 innings)"
        for m, i in full.items()
    }
    assert {"335987", "1178424", "1136566"}.isdisjoint(found)
    assert set(model_reach(short, deliveries, scheduled=True)) == set(regular["match_id"])
