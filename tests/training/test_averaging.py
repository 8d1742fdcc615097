"""The moving average of the weights (cricket_attn/training/averaging.py): a half-life in epochs means the same
on a league of 140 steps an epoch as on one of 900."""

from __future__ import annotations

import pytest

from cricket_attn.training.averaging import EpochEMA, ema_decay


@pytest.mark.parametrize("steps", [1, 140, 900])
@pytest.mark.parametrize("half_life", [0.25, 1.0, 3.0])
def test_a_steps_weight_halves_after_the_half_life_in_epochs(steps, half_life):
    decay = ema_decay(half_life, steps)
    assert 0 < decay < 1
    assert decay ** (half_life * steps) == pytest.approx(0.5, rel=1e-9)


def test_more_steps_an_epoch_make_each_step_count_less():
    assert ema_decay(0.25, 140) < ema_decay(0.25, 900)
    assert ema_decay(0.25, 0) == ema_decay(0.25, 1)  # an empty epoch counts as one step, never a division by 0


@pytest.mark.parametrize("bad", [0, -1.0])
def test_a_half_life_that_is_not_positive_is_refused(bad):
    with pytest.raises(ValueError, match="half_life_epochs must be above 0"):
        EpochEMA(half_life_epochs=bad)
