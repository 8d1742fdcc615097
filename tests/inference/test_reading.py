"""What the scoring commands share when they read match files (cricket_attn/inference/reading.py): the lines
they print about the matches, what was left out and where the model's earlier matches come from."""

from __future__ import annotations

import json
from datetime import date
from types import SimpleNamespace

import pytest

from cricket_attn.cli import named_list
from cricket_attn.commands._scoring import CommandSummary
from cricket_attn.inference.reading import (
    dated_ahead,
    known_sources,
    left_out,
    nothing_found,
    read_matches,
    with_earlier,
)
from tests.conftest import FIXTURES


def test_matches_dated_after_today_are_said_once_with_the_first(fixture_tables):
    first = fixture_tables.matches.sort_values("date").iloc[0]
    (line,) = dated_ahead(fixture_tables, today=date(2000, 1, 1))
    assert line.startswith(f"{len(fixture_tables.matches):,} match(es) dated after today")
    assert str(first["match_id"]) in line
    assert dated_ahead(fixture_tables, today=date(2100, 1, 1)) == []


def test_where_the_earlier_matches_come_from():
    trained_on = SimpleNamespace(sources=["embedded", "cricsheet:t20s_male"])
    assert known_sources(None, trained_on) == (
        ["embedded", "cricsheet:t20s_male"],
        "embedded, cricsheet:t20s_male (the model's training data)",
    )
    assert known_sources(["my.zip"], trained_on) == (["my.zip"], "my.zip (--history)")
    assert known_sources(None, SimpleNamespace(sources=None))[1] == "embedded (the model's training data)"


def test_a_long_list_is_counted_and_cut():
    assert named_list("batters unknown", []) == "batters unknown: 0"
    assert named_list("venues", ["A", "B"]) == "venues: 2 (A, B)"
    many = named_list("bowlers", [f"p{i}" for i in range(12)], show=3)
    assert many == "bowlers: 12 (p0, p1, p2, ...)"


def test_files_left_out_are_named_and_a_folder_without_matches_says_what_it_holds(tmp_path, phases):
    good = sorted(FIXTURES.glob("*.json"))[0]
    (tmp_path / good.name).write_bytes(good.read_bytes())
    (tmp_path / "broken.json").write_text('{"info": ')
    tables = read_matches([str(tmp_path)], tmp_path / "data", phases)
    assert len(tables.matches) == 1
    (reason,) = left_out(tables)
    assert "broken.json" in reason
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no matches here")
    nothing = read_matches([str(empty)], tmp_path / "data", phases)
    assert "no Cricsheet match files" in nothing_found([str(empty)], nothing)


def test_the_summary_names_the_model_what_it_did_not_know_and_what_was_skipped():
    summary = CommandSummary(
        matches=2,
        unknown={"batters": ["A Newman"]},
        skipped=["x.json: not JSON"],
        out="out.csv",
        model="run 1",
        known_from="embedded (the model's training data)",
        notes=["1 match dated after today"],
    )
    text = str(summary)
    assert "model:              run 1" in text and "earlier matches:    embedded" in text
    assert "batters unknown to the model: 1 (A Newman)" in text
    assert "skipped:            1\n  x.json: not JSON" in text and text.endswith("written:            out.csv (0.00 s)")


def test_a_commands_matches_beside_the_earlier_ones_each_match_once_each_player_by_his_id(tmp_path, phases):
    """The earlier matches (`--history`, else the model's data) are read beside the command's: every match once,
    and a player of a file without a registry given the id his name has in the earlier matches."""
    first = sorted(FIXTURES.glob("*.json"))[0]
    doc = json.loads(first.read_bytes())
    doc["info"].pop("registry")
    files = tmp_path / "files"
    files.mkdir()
    (files / first.name).write_text(json.dumps(doc))
    tables = read_matches([str(files)], tmp_path / "data", phases)
    assert (tables.deliveries["batter_id"].isna() | (tables.deliveries["batter_id"] == "")).all()
    model = SimpleNamespace(sources=None)
    data = with_earlier(tables, model, [str(FIXTURES)], phases, tmp_path / "data", [str(files)])
    archive = read_matches([str(FIXTURES)], tmp_path / "data", phases)
    assert data.known_from == f"{FIXTURES} (--history)" and data.skipped == []
    assert sorted(data.matches["match_id"]) == sorted(archive.matches["match_id"])  # the command's match once
    assert data.known["match_id"].astype(str).value_counts().to_dict() == (
        archive.deliveries["match_id"].astype(str).value_counts().to_dict()
    )
    given = data.deliveries.set_index("batter")["batter_id"].astype(object)
    by_archive = archive.deliveries.drop_duplicates("batter").set_index("batter")["batter_id"].astype(object)
    assert (given.to_numpy() == by_archive[given.index].to_numpy()).all() and given.notna().all()
    assert f"registry ids by name: {3 * len(tables.deliveries):,} ball-roles" in data.notes[0]
    # Not needed (a model of no records, no recent level): the command's own matches alone, nothing said.
    alone = with_earlier(tables, model, [str(FIXTURES)], phases, tmp_path / "data", [str(files)], needed=False)
    assert alone.known is alone.deliveries and alone.known_from == "" and len(alone.matches) == 1
    # The earlier matches are the command's own: not read twice.
    same = with_earlier(tables, model, [str(files)], phases, tmp_path / "data", [str(files)])
    assert same.known is same.deliveries and len(same.matches) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=f"^--history {empty}: no Cricsheet match files"):
        with_earlier(tables, model, [str(empty)], phases, tmp_path / "data", [str(files)])
    ahead = tmp_path / "ahead"  # earlier matches of their info alone: no record, and no hint to simulate them
    ahead.mkdir()
    doc.pop("innings"), doc["info"].pop("outcome")
    (ahead / first.name).write_text(json.dumps(doc))
    no_record = r"without deliveries \(first: match \d+, a match not begun: no record in it\)$"
    with pytest.raises(ValueError, match=no_record):
        with_earlier(tables, model, [str(ahead)], phases, tmp_path / "data", [str(files)])
