"""The deliveries table: columns, order, phases, skipping bad files, the parquet cache and the summary."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from cricket_attn.data.deliveries import COLUMNS, PhaseRules, build_tables, load_tables, summary
from cricket_attn.data.sources import MatchFile, iter_match_files
from cricket_attn.laws import OUTCOMES, T20_MATCH_TYPES
from tests.conftest import FIXTURES, match_file

LEAGUES = FIXTURES.parent / "cricsheet_t20"  # real matches of other competitions (README)


def test_columns_and_order(fixture_tables):
    d, m = fixture_tables.deliveries, fixture_tables.matches
    assert tuple(d.columns) == COLUMNS
    assert len(m) == 20 and m["match_id"].is_unique
    # Matches in date order, then innings, then deliveries in the order they were bowled.
    assert m["date"].is_monotonic_increasing
    keys = list(zip(d["date"], d["match_id"], d["innings"], d["delivery_index"]))
    assert keys == sorted(keys, key=lambda k: (k[0], k[1], k[2], k[3]))
    assert list(d["outcome"].cat.categories) == list(OUTCOMES)
    assert d["innings"].min() == 1 and set(d["season"]) <= set(range(2008, 2027))


def test_registry_ids(deliveries):
    first = deliveries[deliveries["match_id"] == "1082591"].iloc[0]
    assert (first["batter"], first["batter_id"], first["bowler"], first["bowler_id"]) == (
        "DA Warner",
        "dcce6f09",
        "TS Mills",
        "245c97cb",
    )
    assert deliveries["batter_id"].notna().all() and deliveries["bowler_id"].notna().all()


def test_each_side_is_listed_in_the_order_of_the_file(fixture_tables):
    m = fixture_tables.matches.set_index("match_id").loc["1473439"]
    assert m["team1"] == "Sunrisers Hyderabad"
    assert m["team1_players"].split(";")[:3] == ["A Zampa", "Abhishek Sharma", "TM Head"]
    assert all(
        len(m[c].split(";")) in (11, 12)
        for m in fixture_tables.matches.to_dict("records")
        for c in ("team1_players", "team2_players")
    )


def test_no_result_match_has_its_deliveries(fixture_tables):
    m = fixture_tables.matches.set_index("match_id").loc["1178424"]
    assert m["result"] == "no result" and pd.isna(m["winner"]) and m["n_deliveries"] > 0


def test_t20_phases_by_over(deliveries):
    regular = deliveries[~deliveries["is_super_over"] & (deliveries["powerplays"] == "0-35")]
    over = regular["over"] + 1  # Cricsheet's overs are 0-based
    assert (regular.loc[over <= 6, "phase"] == "powerplay").all()
    assert (regular.loc[(over >= 7) & (over <= 15), "phase"] == "middle").all()
    assert (regular.loc[over >= 16, "phase"] == "death").all()


def test_a_powerplay_shortened_by_rain_is_the_innings_own(deliveries):
    """1136566's chase of 71 in 6 overs had a two-over powerplay (0.1-1.7: a wide in the second over, so
    its seventh delivery closes it); 1178424, five overs a side, two overs each."""
    for match_id, innings in (("1136566", 2), ("1178424", 1), ("1178424", 2)):
        inn = deliveries[(deliveries["match_id"] == match_id) & (deliveries["innings"] == innings)]
        assert (inn["powerplays"] == "0-11").all()
        assert (inn["phase"] == "powerplay").to_numpy().tolist() == (inn["over"] <= 1).to_numpy().tolist()
        assert (inn.loc[inn["over"] >= 2, "phase"] == "middle").all()


def test_big_bash_powerplay_and_power_surge_are_read_from_the_file(phases):
    """The Big Bash's powerplay has been four overs since 2020-21, with a two-over batting Power Surge the
    batting side calls from the 11th over: 1386137 took it in overs 17-18 and 12-13."""
    d = build_tables(iter_match_files([LEAGUES / "1386137.json"]), phases).deliveries
    expected = {1: ([(0, 3), (16, 17)], "0-23;96-107"), 2: ([(0, 3), (11, 12)], "0-23;66-77")}
    for innings, (windows, recorded) in expected.items():
        inn = d[d["innings"] == innings]
        assert (inn["powerplays"] == recorded).all()
        surge = inn["over"].apply(lambda o, w=windows: any(a <= o <= b for a, b in w))
        assert (inn.loc[surge, "phase"] == "powerplay").all() and surge.sum() >= 36
        assert (inn.loc[~surge & (inn["over"] >= 15), "phase"] == "death").all()
        assert (inn.loc[~surge & (inn["over"] < 15), "phase"] == "middle").all()


def test_hundred_phases_by_legal_ball(phases):
    # The Hundred is a T20 match type bowled in sets of 5: phases count legal balls, not overs. The file
    # records each innings' 25-ball powerplay (0.1-4.5; its super overs none); without it (as two of the
    # Hundred's 2024 innings) the format's rule gives the same 25 balls.
    doc = json.loads((LEAGUES / "1417822.json").read_bytes())
    bare = json.loads(json.dumps(doc))
    for inn in bare["innings"]:
        inn.pop("powerplays", None)
    for name, match, recorded in (("recorded", doc, "0-24"), ("by rule", bare, "")):
        d = build_tables([MatchFile(f"{name}.json", name, json.dumps(match).encode())], phases).deliveries
        regular = d[~d["is_super_over"]]
        assert (d["balls_per_over"] == 5).all() and (regular["powerplays"] == recorded).all()
        ball = regular["legal_ball_index"] + 1
        assert (regular.loc[ball <= 25, "phase"] == "powerplay").all()
        assert (regular.loc[(ball > 25) & (ball < 76), "phase"] == "middle").all()
        assert (regular.loc[ball >= 76, "phase"] == "death").all()


def test_without_recorded_powerplays_the_format_rule_decides(phases):
    doc = json.loads(match_file("1136566").raw)
    for inn in doc["innings"]:
        del inn["powerplays"]
    d = build_tables([MatchFile("old.json", "old", json.dumps(doc).encode())], phases).deliveries
    regular = d[~d["is_super_over"]]
    assert (d["powerplays"] == "").all()
    assert (regular["phase"] == "powerplay").to_numpy().tolist() == (regular["over"] <= 5).to_numpy().tolist()


def test_a_later_mandatory_block_is_not_a_powerplay_and_bad_windows_name_the_field(phases):
    doc = json.loads(match_file("1082591").raw)
    doc["innings"][0]["powerplays"].append({"from": 10.1, "to": 13.6, "type": "mandatory"})  # an ODI's P2-like
    d = build_tables([MatchFile("p2.json", "p2", json.dumps(doc).encode())], phases).deliveries
    assert (d.loc[d["innings"] == 1, "powerplays"] == "0-35").all()
    bad = (
        ({"from": 3.1, "to": 1.6}, "powerplays[0]"),
        ({"from": 0.0, "to": 5.6}, "powerplays[0].from"),
        ({"from": 0.1, "to": 1e20}, "powerplays[0].to"),  # not a ball: one file's error, not the batch's
    )
    for window, field in bad:
        doc = json.loads(match_file("1082591").raw)
        doc["innings"][1]["powerplays"] = [window]
        result = build_tables([MatchFile("bad.json", "bad", json.dumps(doc).encode())], phases)
        assert result.deliveries.empty and len(result.skipped) == 1
        assert f"innings[1].{field}" in result.skipped[0].reason and "bad" in result.skipped[0].match_id


def test_other_formats_and_rule_validation(phases):
    doc = json.loads(match_file("1082591").raw)
    doc["info"]["match_type"] = "Test"
    d = build_tables([MatchFile("test.json", "t", json.dumps(doc).encode())], phases).deliveries
    assert (d["phase"] == "middle").all()
    with pytest.raises(ValueError, match="unit"):
        PhaseRules.from_config(
            {"formats": {"x": {"match_types": ["T20"], "unit": "inning", "powerplay": [1, 6], "death": [16, 20]}}}
        )
    with pytest.raises(ValueError, match="must end before"):
        PhaseRules.from_config(
            {"formats": {"x": {"match_types": ["T20"], "unit": "over", "powerplay": [1, 16], "death": [16, 20]}}}
        )


def test_the_phases_t20_format_is_the_laws_t20(phases):
    # The parser caps a T20's overs by the laws' match types, the phases pick a T20's by the config's: one set.
    assert set(phases.formats["t20"].match_types) == T20_MATCH_TYPES


def test_bad_files_are_skipped_and_good_ones_kept(phases, tmp_path):
    for f in FIXTURES.glob("1359*.json"):
        shutil.copy(f, tmp_path)
    raw = (FIXTURES / "1082591.json").read_bytes()
    (tmp_path / "truncated.json").write_bytes(raw[:1000])
    doc = json.loads(raw)
    doc["innings"][0]["overs"][0]["deliveries"][0]["runs"]["batter"] = "four"
    (tmp_path / "1082591.json").write_text(json.dumps(doc))
    (tmp_path / "README.txt").write_text("not a match")
    result = build_tables(iter_match_files([tmp_path]), phases)
    assert sorted(result.matches["match_id"]) == ["1359475", "1359477", "1359478"]
    reasons = sorted(s.reason for s in result.skipped)
    assert len(reasons) == 2
    assert "match 1082591: field innings[0].overs[0].deliveries[0].runs.batter" in reasons[0]
    assert "truncated.json: match truncated: field (file): invalid JSON" in reasons[1]


def test_duplicate_match_is_left_out_saying_which_copy_was_kept(phases):
    from cricket_attn.data.sources import MatchFile

    f = match_file("1082591")
    other = MatchFile("mirror/1082591.json", "1082591", f.raw.replace(b'"DA Warner"', b'"D Warner"'))
    result = build_tables([f, MatchFile("copy/1082591.json", "1082591", f.raw), other], phases)
    assert len(result.matches) == 1 and (result.deliveries["batter"] == "DA Warner").any()
    assert not result.skipped  # a match two sources hold is not a bad file (--strict passes)
    same, different = (s.reason for s in result.duplicates)
    assert same == f"copy/1082591.json: match 1082591: duplicate match id, the same content as {f.name}, which was kept"
    assert different.startswith("mirror/1082591.json: match 1082591: duplicate match id, content different from ")


def test_cache_round_trip_is_identical(phases, tmp_path):
    first = load_tables([FIXTURES], phases, data_dir=tmp_path)
    cached = list((tmp_path / "cache").glob("deliveries-*.parquet"))
    assert len(cached) == 1
    again = load_tables([FIXTURES], phases, data_dir=tmp_path)
    pd.testing.assert_frame_equal(first.deliveries, again.deliveries)
    pd.testing.assert_frame_equal(first.matches, again.matches)
    # Another phase rule is another cache entry, never a stale table.
    other = PhaseRules(formats={}, super_over="death", other="middle")
    assert (load_tables([FIXTURES], other, data_dir=tmp_path).deliveries["phase"].astype(str) != "powerplay").all()
    assert len(list((tmp_path / "cache").glob("deliveries-*.parquet"))) == 2


def test_summary(fixture_tables):
    text = summary(fixture_tables)
    assert "matches:      20" in text
    assert f"deliveries:   {len(fixture_tables.deliveries):,}" in text
    assert "super-over innings" in text and "files skipped: 0" in text
    for name in OUTCOMES:
        assert f"\n  {name} " in text
