"""Shared metrics: the calibration (a temperature and a wicket offset) recovers a known miscalibration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cricket_attn.laws import OUTCOME_INDEX, OUTCOMES
from cricket_attn.metrics import PROB_COLUMNS, binary_ece, calibrated, fit_calibration, pinball, pit_coverage, score


def scored_frame(logits: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    frame = pd.DataFrame(p / p.sum(axis=1, keepdims=True), columns=list(PROB_COLUMNS))
    frame["outcome"] = pd.Categorical.from_codes(labels, categories=OUTCOMES)
    frame["phase"] = "middle"
    return frame


@pytest.mark.parametrize("true_temperature, true_offset", [(0.8, 0.0), (1.0, -0.3), (1.3, 0.2)])
def test_fit_calibration_recovers_a_known_miscalibration(true_temperature, true_offset):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(40_000, len(OUTCOMES))) * 1.5
    # Outcomes drawn from softmax(logits); the model reports softmax(logits * T - offset on the wicket):
    # over-confident for T > 1, wickets too likely for an offset below zero.
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (p.cumsum(axis=1) < rng.random((len(p), 1))).sum(axis=1)
    reported = logits * true_temperature
    reported[:, OUTCOME_INDEX["wicket"]] -= true_offset * true_temperature
    frame = scored_frame(reported, labels)
    temperature, offset = fit_calibration(frame)
    assert temperature == pytest.approx(true_temperature, rel=0.03)
    assert offset == pytest.approx(true_offset, abs=0.05)
    rescaled = frame.copy()
    rescaled[list(PROB_COLUMNS)] = calibrated(frame[list(PROB_COLUMNS)].to_numpy(), temperature, offset)
    truth = scored_frame(logits, labels)
    assert np.abs(rescaled[list(PROB_COLUMNS)].to_numpy() - truth[list(PROB_COLUMNS)].to_numpy()).max() < 0.02
    assert score(rescaled)["log_loss"] <= score(frame)["log_loss"] + 1e-12
    # Without the wicket offset (calibrate_wickets=false): the temperature alone.
    alone, none = fit_calibration(frame, wickets=False)
    assert none == 0.0
    if true_offset == 0.0:
        assert alone == pytest.approx(temperature, rel=0.01)


def test_binary_ece_of_a_calibrated_and_a_biased_forecast():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200_000)
    y = (rng.uniform(size=p.size) < p).astype(float)
    assert binary_ece(p, y, 10) < 0.01 and abs(binary_ece(np.clip(p + 0.2, 0, 1), y, 10) - 0.2) < 0.03


def test_pinball_by_hand():
    y, q10, q50, q90 = (np.array([v]) for v in (30.0, 5.0, 20.0, 60.0))
    # under q10's and q50's: 0.1 * 25, 0.5 * 10; over q90's: (1 - 0.9) * 30
    assert pinball(y, q10, q50, q90) == pytest.approx([(2.5 + 5 + 3) / 3])


def test_pit_coverage_by_hand():
    draws = [np.array([0.0, 0, 0, 0, 0, 1, 2, 3, 4, 5])]  # F(0) = 0.5: a duck's PIT is uniform on [0, 0.5]
    assert pit_coverage(draws, np.array([0.0])) == pytest.approx([(0.5 - 0.1) / 0.5])
    assert pit_coverage(draws, np.array([5.0])) == pytest.approx([0.0])  # on [0.9, 1]
    assert pit_coverage(draws, np.array([3.0])) == pytest.approx([1.0])  # on [0.7, 0.8]
    assert pit_coverage(draws, np.array([9.0])) == pytest.approx([0.0])  # above every draw: 1
    assert pit_coverage(draws, np.array([2.5])) == pytest.approx([1.0])  # between draws: F = 0.7 exactly
    # a forecast that is right covers 0.8 of outcomes drawn from it, however much of it is on 0
    rng = np.random.default_rng(0)
    x = rng.poisson(0.4, 4000).astype(float)
    assert pit_coverage([x] * 4000, rng.poisson(0.4, 4000).astype(float)).mean() == pytest.approx(0.8, abs=0.02)
