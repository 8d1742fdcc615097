"""Records as of the day: sums over a key's balls of earlier dates only, never moved by a later match."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cricket_attn.data.deliveries import PHASES, build_tables
from cricket_attn.data.features import entity_key
from cricket_attn.data.histories import days
from cricket_attn.data.records import ROLES, RecordBook, RecordSettings
from cricket_attn.data.sources import iter_match_files
from cricket_attn.laws import N_OUTCOMES
from tests.conftest import FIXTURES

LEAGUES = FIXTURES.parent / "cricsheet_t20"
SETTINGS = RecordSettings(competition_strength=300.0, rate_strength=50.0, half_life_days=200.0)


@pytest.fixture(scope="module")
def pooled(phases):
    """The 20 IPL and 5 other-league fixture matches, super overs left out (as the book leaves them)."""
    return build_tables(iter_match_files([FIXTURES, LEAGUES]), phases).deliveries


def brute_mix(d: pd.DataFrame, strength: float) -> np.ndarray:
    """Each ball's competition mix in its phase from earlier days' balls, by plain pandas."""
    d = d[~d["is_super_over"].astype(bool)]
    day, code = days(d["date"]), d["outcome"].cat.codes.to_numpy()
    phase, competition = d["phase"].astype(str).to_numpy(), d["competition"].astype(str).to_numpy()
    out = np.zeros((len(d), N_OUTCOMES))
    cells = pd.DataFrame({"c": competition, "p": phase, "t": day}).drop_duplicates()
    for c, p, t in cells.itertuples(index=False):
        pool = np.bincount(code[(phase == p) & (day < t)], minlength=N_OUTCOMES)
        pool = (pool + 1) / (pool.sum() + N_OUTCOMES)
        own = np.bincount(code[(competition == c) & (phase == p) & (day < t)], minlength=N_OUTCOMES)
        out[(competition == c) & (phase == p) & (day == t)] = (own + strength * pool) / (own.sum() + strength)
    return out


def queries(d: pd.DataFrame, role: str) -> pd.DataFrame:
    """Every (key, match date) of the role in `d`: what a match's balls ask the book."""
    return pd.DataFrame({"key": entity_key(d, role), "day": days(d["date"])}).drop_duplicates().reset_index(drop=True)


# A competition's recent record with a half-life of its own (20 days: a league's drift within its season).
OWN_HALF_LIFE = RecordSettings(**SETTINGS.to_dict(), competition_half_life_days=20.0)


@pytest.mark.parametrize("settings", [SETTINGS, OWN_HALF_LIFE], ids=["one half-life", "competition's own"])
@pytest.mark.parametrize("role", ROLES)
def test_a_record_is_the_sum_of_the_keys_balls_on_earlier_dates(pooled, role, settings):
    book = RecordBook(pooled, settings)
    d = pooled[~pooled["is_super_over"].astype(bool)]
    keys, day = entity_key(d, role), days(d["date"])
    observed = np.eye(N_OUTCOMES)[d["outcome"].cat.codes.to_numpy()]
    expected = brute_mix(pooled, SETTINGS.competition_strength)
    q = queries(d, role)
    record = book.before(role, q["key"].to_numpy(), q["day"].to_numpy())
    with_record = 0
    for i, (key, t) in enumerate(q.itertuples(index=False)):
        mine = (keys == key) & (day < t)
        half_life = 20.0 if role == "competition" and settings is OWN_HALF_LIFE else SETTINGS.half_life_days
        weight = np.exp2(-(t - day[mine]) / half_life)[:, None]
        np.testing.assert_allclose(record.observed[i], observed[mine].sum(0), rtol=0, atol=1e-9)
        np.testing.assert_allclose(record.expected[i], expected[mine].sum(0), rtol=0, atol=1e-9)
        assert record.balls[i] == mine.sum()
        np.testing.assert_allclose(record.recent_observed[i], (weight * observed[mine]).sum(0), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(record.recent_expected[i], (weight * expected[mine]).sum(0), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(record.recent_balls[i], weight.sum(), rtol=1e-9)
        assert record.last_day[i] == (day[mine].max() if mine.any() else -1)
        with_record += bool(mine.any())
    assert with_record >= (3 if role != "competition" else 1)  # keys of the fixtures that meet again


def test_each_balls_expected_mix_is_its_competitions_of_earlier_days(pooled):
    book = RecordBook(pooled, SETTINGS)
    d = pooled[~pooled["is_super_over"].astype(bool)]
    phase = pd.Categorical(d["phase"].astype(object), PHASES).codes
    mix = book.mix(entity_key(d, "competition"), phase, days(d["date"]))
    np.testing.assert_allclose(mix, brute_mix(pooled, SETTINGS.competition_strength), rtol=0, atol=1e-12)
    np.testing.assert_allclose(mix.sum(1), 1.0, atol=1e-12)
    # The Big Bash's one match has no Big Bash ball before it: its mix is the pool's of earlier days, as
    # a competition never seen gets.
    bbl = (d["competition"] == "Big Bash League").to_numpy()
    unseen = book.mix(np.full(bbl.sum(), "nowhere", dtype=object), phase[bbl], days(d["date"])[bbl])
    assert bbl.any() and np.array_equal(mix[bbl], unseen)
    assert not np.allclose(mix[bbl], mix[~bbl][: bbl.sum()])


@pytest.mark.parametrize("role", ROLES)
def test_a_later_match_never_changes_an_earlier_record(pooled, role):
    dates = sorted(pooled["date"].unique())
    cut = dates[len(dates) // 2]
    earlier = pooled[pooled["date"] <= cut]
    full, part = RecordBook(pooled, SETTINGS), RecordBook(earlier, SETTINGS)
    q = queries(earlier, role)
    a = full.before(role, q["key"].to_numpy(), q["day"].to_numpy())
    b = part.before(role, q["key"].to_numpy(), q["day"].to_numpy())
    for field in ("observed", "expected", "balls", "recent_observed", "recent_expected", "recent_balls", "last_day"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert (a.balls > 0).any()


def test_matches_of_one_date_do_not_see_each_other(pooled):
    """Two matches moved to one date: neither's players read the other, as if it had not been played."""
    ipl_2024 = (pooled["season"] == 2024) & (pooled["competition"] == "Indian Premier League")
    ids = pooled.loc[ipl_2024, "match_id"].unique()[:2]
    first, second = (pooled["match_id"] == m for m in ids)
    same_day = pooled.copy()
    same_day.loc[second, "date"] = pooled.loc[first, "date"].iloc[0]
    without_second = same_day[~second]
    t = days(same_day.loc[first, "date"].iloc[:1])
    for role in ("batter", "bowler", "venue", "competition"):
        keys = np.unique(entity_key(same_day[first | second], role))
        a = RecordBook(same_day, SETTINGS).before(role, keys, np.repeat(t, len(keys)))
        b = RecordBook(without_second, SETTINGS).before(role, keys, np.repeat(t, len(keys)))
        assert np.array_equal(a.observed, b.observed) and np.array_equal(a.balls, b.balls), role
    # ... while a day later both count.
    later = RecordBook(same_day, SETTINGS).before("competition", np.array(["Indian Premier League"]), t + 1)
    earlier = RecordBook(same_day, SETTINGS).before("competition", np.array(["Indian Premier League"]), t)
    both = (~same_day.loc[first | second, "is_super_over"].astype(bool)).sum()
    assert later.balls[0] - earlier.balls[0] == both


def test_an_unknown_player_and_a_debut_have_empty_records(pooled):
    book = RecordBook(pooled, SETTINGS)
    first_day = days(pooled["date"]).min()
    debutant = entity_key(pooled.iloc[:1], "batter")
    record = book.before("batter", np.array(["nobody", debutant[0]], dtype=object), np.array([20000, first_day]))
    assert (record.observed == 0).all() and (record.balls == 0).all() and (record.recent_balls == 0).all()
    assert (record.last_day == -1).all()
    assert (record.effect(SETTINGS.rate_strength) == 0).all()
    assert (record.effect(SETTINGS.rate_strength, recent=True) == 0).all()


def test_an_effect_is_observed_over_expected_shrunk_towards_nothing(pooled):
    book = RecordBook(pooled, SETTINGS)
    d = pooled[pooled["season"] == 2026]
    q = queries(d, "batter")
    record = book.before("batter", q["key"].to_numpy(), q["day"].to_numpy())
    known = record.balls > 0
    assert known.sum() >= 3
    effect = record.effect(SETTINGS.rate_strength)[known]
    raw = np.log(record.observed[known] + 1e-9) - np.log(record.expected[known])
    # Shrinkage: the effect lies between nothing and the raw log ratio, and vanishes as strength grows.
    assert ((np.abs(effect) <= np.abs(raw) + 1e-12) & (np.sign(effect) * np.sign(raw) >= 0)).all()
    assert np.abs(record.effect(1e12)[known]).max() < 1e-6
    assert np.abs(effect).max() > 0.05


def test_settings_must_be_positive():
    with pytest.raises(ValueError, match="records.half_life_days=0"):
        RecordSettings(half_life_days=0)
    with pytest.raises(ValueError, match="records.competition_half_life_days=-5"):
        RecordSettings(competition_half_life_days=-5)


def test_a_half_life_too_short_for_the_matches_span_is_refused(pooled):
    """Recent sums weigh a ball 2^(days since the first match / half-life): a half-life under a thousandth of
    the span would overflow, so it is refused with the span it would need."""
    with pytest.raises(ValueError, match=r"records: a half-life of 5.0 days is too short for matches \d+ days apart"):
        RecordBook(pooled, RecordSettings(competition_half_life_days=5.0))
