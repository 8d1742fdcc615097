"""The simulator's match state gives the model exactly what the training pipeline gives it."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from cricket_attn.data.deliveries import build_tables
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.data.sources import iter_match_files
from cricket_attn.simulation.setup import InningsSetup
from cricket_attn.simulation.state import InningsState, replay
from tests.conftest import FIXTURES

COMPARED = ("prev_outcome", "innings_marker", "batter", "bowler", "venue", "legal_ball_index", "ball_in_over", "over",
            "phase", "batter_balls", "bowler_balls")  # fmt: skip


@pytest.fixture(scope="module", params=[None, {}], ids=["rates", "records"])
def encoder(deliveries, request):
    """Fitted on the seasons to 2023: with rates of those seasons, or with records as of each match's date."""
    train = deliveries[deliveries["season"] <= 2023]
    return SequenceEncoder.fit_encode(train, min_count=5, known=deliveries, records=request.param)[0]


def regular_innings(deliveries):
    d = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    for _, inn in d.groupby(["match_id", "innings"], sort=False, observed=True):
        yield inn


def test_replayed_state_gives_the_training_inputs(fixture_tables, deliveries, encoder, phases):
    """Every ball of every regular innings of the fixture matches (both innings, the DLS-reduced chase, the
    five- and seven-ball overs, a retirement, a run out off a no-ball; the super overs left out as in
    training): the state's inputs equal the encoder's, as training encodes the whole table, to 1e-6."""
    regular = deliveries[~deliveries["is_super_over"].astype(bool)].reset_index(drop=True)
    encoded = encoder.encode(regular)
    compared = 0
    for k, inn in enumerate(regular_innings(deliveries)):
        n, match = len(inn), inn["match_id"].iloc[0]
        expected = encoded.collate([k])
        assert expected["row"][0, :n].tolist() == inn.index.tolist()  # the same innings, ball for ball
        setup = InningsSetup.from_table(inn, fixture_tables.matches)
        target = inn["target_runs"].astype("Float64").fillna(0).iloc[0]
        state = InningsState(setup, encoder, phases, 1, float(target))
        balls, seen = [], {name: [] for name in (*COMPARED, "numeric")}

        def check(i, state, by_laws, balls=balls, seen=seen):
            balls.append(i)
            got = state.inputs()
            for name, values in seen.items():
                values.append(got[name][0, 0].clone())  # the state moves its tensors in place

        replay(state, inn, check)
        assert balls == list(range(n))
        for name in COMPARED:
            wrong = (torch.stack(seen[name]) != expected[name][0, :n]).nonzero().flatten().tolist()
            assert not wrong, (name, match, wrong[:5])
        torch.testing.assert_close(
            torch.stack(seen["numeric"]),
            expected["numeric"][0, :n],
            rtol=0,
            atol=1e-6,
            msg=lambda m, match=match: f"match {match}: {m}",
        )
        compared += n
    assert compared == len(regular)


def test_the_batting_order_is_the_listed_one_with_the_impact_swap_last(fixture_tables, deliveries):
    """1473439 lists Sunrisers' 12 as A Zampa (swapped out, did not bat), Abhishek Sharma, TM Head, ..."""
    inn = deliveries[(deliveries["match_id"].astype(str) == "1473439") & (deliveries["innings"] == 1)]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    assert setup.batting[:3] == ["Abhishek Sharma", "TM Head", "Ishan Kishan"] and setup.batting[11] == "A Zampa"
    assert "A Zampa" not in set(inn["batter"].astype(str)) | set(inn["non_striker"].astype(str))
    assert len(setup.batting) == 12 and set(inn["batter"].astype(str)) <= set(setup.batting)
    old = deliveries[(deliveries["match_id"].astype(str) == "1082591") & (deliveries["innings"] == 1)]
    assert (
        InningsSetup.from_table(old, fixture_tables.matches).batting[:2]
        == list(pd.unique(old[["batter", "non_striker"]].astype(str).to_numpy().ravel()))[:2]
    )  # 11 listed: as they are
    assert set(inn["bowler"].astype(str)) <= set(setup.bowling)


@pytest.mark.parametrize("encoder", [None], ids=["rates"], indirect=True)  # the striker does not hang on features
def test_the_laws_say_who_faces_the_next_ball(fixture_tables, deliveries, encoder, phases):
    """Without the record's say, the state puts the right batter on strike after every delivery that
    dismissed no one: an odd number of runs run swaps the ends, and so does the end of an over. The one
    exception is the famous short run of 1216493 (two run, one counted: 18.3 shows 1 and no change of ends)."""
    disagree, checked = [], 0
    for inn in regular_innings(deliveries):
        setup = InningsSetup.from_table(inn, fixture_tables.matches)
        left = (inn["wicket_count"].to_numpy() > 0) | inn["player_out"].notna().to_numpy()
        batters = inn["batter"].astype(str).to_numpy()

        def check(i, state, by_laws, inn=inn, setup=setup, left=left, batters=batters):
            nonlocal checked
            if i > 0 and not left[i - 1]:
                checked += 1
                if setup.batting[by_laws[0].item()] != batters[i]:
                    disagree.append(
                        (inn["match_id"].iloc[0], int(inn["over"].iloc[i - 1]), int(inn["ball_in_over"].iloc[i - 1]))
                    )

        replay(InningsState(setup, encoder, phases, 1), inn, check)
    assert checked > 4000
    assert disagree == [("1216493", 18, 3)]


def test_listed_players_who_did_not_open_are_still_to_bat(fixture_tables, deliveries, encoder, phases):
    """A side listed with its openers third and fourth: after replaying the real start of the innings, the
    first two listed have not batted, and the next batter in is the first of them."""
    inn = next(regular_innings(deliveries)).reset_index(drop=True)
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    openers = [str(inn["batter"].iloc[0]), str(inn["non_striker"].iloc[0])]
    others = [p for p in setup.batting if p not in openers]
    setup.batting = [*others[:2], *openers, *others[2:]]
    start = inn.iloc[:6]
    state = replay(InningsState(setup, encoder, phases, 1), start[start["wicket_count"] == 0].iloc[:3])
    assert not state.batted[0, :2].any() and state.batted[0, 2:4].all()
    assert int(state.next_batter()[0]) == 0


def test_a_side_listed_by_name_is_known_by_this_matchs_registry_ids(fixture_tables, deliveries, encoder, phases):
    """Two players can share a name: the simulator reads a listed player as the match file's registry id,
    not as the encoder's last player of that name (here pointed at someone else), and so gets his own
    embedding and rates, the ones the real balls of the innings get."""
    import json

    import numpy as np

    from tests.conftest import FIXTURES

    inn = next(regular_innings(deliveries[deliveries["match_id"] == "1359475"]))
    registry = json.loads((FIXTURES / "1359475.json").read_text())["info"]["registry"]["people"]
    setup = InningsSetup.from_table(inn, fixture_tables.matches)
    assert setup.batting and all(setup.ids[name] == registry[name] for name in setup.batting + setup.bowling)
    opener = setup.batting[0]
    misled = SequenceEncoder.from_dict(encoder.to_dict())
    misled.names["batter"][opener] = "someone-else"  # the last player of that name, another man
    misled.histories, misled.record_book = encoder.histories, encoder.record_book  # what it reads of known matches
    state = InningsState(setup, misled, phases, 1, 0.0)
    assert state.batter_ids[0] == encoder.batters.encode(pd.Series([registry[opener]]))[0] > 0
    own = encoder.key_features("batter", pd.DataFrame({"batter": [registry[opener]], "date": [setup.date]}))[0]
    assert np.allclose(state.batter_rates[0].numpy(), own)


def test_a_simulated_innings_has_its_own_powerplays(deliveries, encoder, phases):
    """The Big Bash innings of 1386137 (four-over powerplay, Power Surge in overs 17-18 and 12-13): the
    simulator's phase of every ball is the table's, as it is for the IPL's rain-shortened ones above."""
    d = build_tables(iter_match_files([FIXTURES.parent / "cricsheet_t20" / "1386137.json"]), phases).deliveries
    for _, inn in d.groupby("innings", observed=True):
        setup = InningsSetup.from_table(inn)
        assert setup.powerplays in ("0-23;96-107", "0-23;66-77")
        phases_seen = []
        replay(
            InningsState(setup, encoder, phases, 1, float(inn["target_runs"].astype("Float64").fillna(0).iloc[0])),
            inn,
            lambda i, state, by_laws, seen=phases_seen: seen.append(int(state.inputs()["phase"][0, 0])),
        )
        assert phases_seen == inn["phase"].cat.codes.tolist()
