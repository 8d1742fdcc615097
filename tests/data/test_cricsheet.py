"""Cricket rules of the parser, each on a real match, and the errors a bad file gets."""

from __future__ import annotations

import json
from datetime import date

import pytest

from cricket_attn.data.cricsheet import DELIVERY_FIELDS, MatchFileError, parse_match, season_year
from cricket_attn.data.sources import MatchFile
from cricket_attn.laws import OUTCOMES
from tests.conftest import FIXTURES, match_file


def rows(deliveries, match_id, **where):
    sel = deliveries["match_id"] == match_id
    for col, value in where.items():
        sel &= deliveries[col] == value
    return deliveries[sel]


def edited(match_id: str, edit) -> MatchFile:
    """A real match file with one edit applied, for rules the IPL archive has no example of."""
    doc = json.loads(match_file(match_id).raw)
    edit(doc)
    return MatchFile(f"{match_id}-edited.json", match_id, json.dumps(doc).encode())


def test_wides_and_noballs_are_not_legal_balls(deliveries):
    inn = rows(deliveries, "1082591", innings=1)
    over0 = inn[inn["over"] == 0]
    # Over 0 of the 2017 opener: 4 balls, a wide (2 runs), then 2 more legal balls.
    assert over0["extras_type"].astype(object).tolist()[4] == "wides"
    assert over0["ball_in_over"].tolist() == [1, 2, 3, 4, 5, 5, 6]
    assert over0["legal_ball_index"].tolist() == [0, 1, 2, 3, 4, 4, 5]
    assert over0["is_legal"].tolist() == [True, True, True, True, False, True, True]
    # Every innings: legal balls counted before each delivery never skip or repeat.
    for _, g in deliveries.groupby(["match_id", "innings"], observed=True):
        assert (g["legal_ball_index"].diff().fillna(0).isin([0, 1])).all()
        assert g["delivery_index"].tolist() == list(range(len(g)))


def test_runs_off_wides_and_noballs(deliveries):
    wide = rows(deliveries, "1082591", innings=1, over=0).iloc[4]
    assert (wide["runs_wides"], wide["runs_total"], wide["outcome"]) == (2, 2, "wide")
    nb = rows(deliveries, "1082591", innings=1, over=1)
    noball = nb[nb["extras_type"] == "noballs"].iloc[0]
    assert noball["outcome"] == "noball" and noball["runs_noballs"] == 1 and not noball["is_legal"]
    # Runs off the bat on a no-ball still count to the batter and the total.
    hit = deliveries[(deliveries["runs_noballs"] > 0) & (deliveries["runs_batter"] > 0)].iloc[0]
    assert hit["runs_total"] == hit["runs_batter"] + hit["runs_noballs"] and hit["outcome"] == "noball"


def test_run_out_off_a_noball_is_a_wicket_not_a_legal_ball(deliveries):
    ro = rows(deliveries, "1216493", innings=1, over=19)
    ro = ro[ro["wicket_count"] > 0]
    assert len(ro) >= 1
    ball = ro[ro["extras_type"] == "noballs"].iloc[0]
    assert ball["wicket_kind"] == "run out" and ball["is_wicket"] and ball["outcome"] == "wicket"
    assert not ball["is_legal"] and ball["runs_total"] == 2


def test_two_dismissals_on_one_delivery_count_as_two_wickets():
    # No IPL match has one, so take a real one and add a second dismissal to a caught delivery.
    def add_run_out(doc):
        for over in doc["innings"][0]["overs"]:
            for d in over["deliveries"]:
                if d.get("wickets"):
                    d["wickets"].append({"player_out": d["non_striker"], "kind": "run out"})
                    return

    def first_innings(parsed):
        return [r for r in (dict(zip(DELIVERY_FIELDS, t)) for t in parsed.deliveries) if r["innings_pos"] == 0]

    before = first_innings(parse_match(match_file("1082591")))
    after = first_innings(parse_match(edited("1082591", add_run_out)))
    two = [r for r in after if r["wicket_count"] == 2]
    assert len(two) == 1
    assert two[0]["wicket_kind"].endswith(";run out") and two[0]["outcome"] == OUTCOMES.index("wicket")
    assert len(two[0]["player_out"].split(";")) == 2
    assert sum(r["wicket_count"] for r in after) == sum(r["wicket_count"] for r in before) + 1


def test_penalty_runs(deliveries):
    pen = deliveries[deliveries["runs_penalty"] > 0]
    assert pen["match_id"].tolist() == ["729309"]
    ball = pen.iloc[0]
    # 5 penalty runs on top of a wide: a wide ball, 7 runs to the total.
    assert (ball["runs_wides"], ball["runs_penalty"], ball["runs_total"]) == (2, 5, 7)
    assert ball["extras_type"] == "wides+penalty" and ball["outcome"] == "wide"


def test_retired_hurt_is_recorded_but_not_a_team_wicket(deliveries):
    rh = deliveries[deliveries["wicket_kind"] == "retired hurt"]
    assert set(rh["match_id"]) == {"729309", "1082628"}
    assert not rh["is_wicket"].any() and (rh["wicket_count"] == 0).all()
    pandya = rh[rh["match_id"] == "1082628"].iloc[0]
    assert pandya["player_out"] == "KH Pandya" and pandya["outcome"] == "1"  # the single he ran


def test_retired_out_is_a_team_wicket(deliveries):
    ro = deliveries[deliveries["wicket_kind"] == "retired out"]
    assert ro["match_id"].tolist() == ["1304066"]
    assert ro["is_wicket"].all() and (ro["outcome"] == "wicket").all()


@pytest.mark.parametrize(("match_id", "innings", "over", "legal"), [("335987", 1, 7, 5), ("1136564", 2, 11, 7)])
def test_overs_of_five_and_seven_legal_balls_as_recorded(deliveries, match_id, innings, over, legal):
    o = rows(deliveries, match_id, innings=innings, over=over)
    assert int(o["is_legal"].sum()) == legal
    assert o["ball_in_over"].max() == legal
    nxt = rows(deliveries, match_id, innings=innings, over=over + 1)
    # The next over starts at ball 1, and the legal ball count carries on from the miscounted over.
    assert nxt["ball_in_over"].iloc[0] == 1
    assert nxt["legal_ball_index"].iloc[0] == o["legal_ball_index"].iloc[-1] + 1


def test_super_overs_are_separate_innings(deliveries):
    m = deliveries[deliveries["match_id"] == "1216493"]
    assert sorted(m["innings"].unique()) == [1, 2, 3, 4]
    assert not m.loc[m["innings"] <= 2, "is_super_over"].any()
    assert m.loc[m["innings"] >= 3, "is_super_over"].all()
    so = m[m["innings"] == 3]
    # A super over restarts the count: its own over 0, ball 1, delivery 0.
    assert so["over"].unique().tolist() == [0]
    assert so["delivery_index"].iloc[0] == 0 and so["legal_ball_index"].iloc[0] == 0
    assert (so["phase"] == "death").all()
    # The tie: both regular innings totals equal.
    totals = m[m["innings"] <= 2].groupby("innings")["runs_total"].sum()
    assert totals[1] == totals[2]


def test_chase_target_from_the_file_including_dls(deliveries):
    dls = rows(deliveries, "1136566", innings=2)
    assert dls["target_runs"].iloc[0] == 71 and dls["target_overs"].iloc[0] == 6
    first_total = rows(deliveries, "1136566", innings=1)["runs_total"].sum()
    assert first_total + 1 != 71  # the DLS target is not the first-innings total + 1
    assert rows(deliveries, "1136566", innings=1)["target_runs"].isna().all()


def test_outcome_precedence_on_real_deliveries(deliveries):
    d = deliveries
    assert (d.loc[d["wicket_count"] > 0, "outcome"] == "wicket").all()
    wides = d[(d["runs_wides"] > 0) & (d["wicket_count"] == 0)]
    assert (wides["outcome"] == "wide").all() and len(wides) > 0
    byes = d[
        (d["runs_byes"] + d["runs_legbyes"] > 0) & (d["runs_batter"] == 0) & d["is_legal"] & (d["wicket_count"] == 0)
    ]
    assert (byes["outcome"] == "bye").all() and len(byes) > 0
    plain = d[d["is_legal"] & (d["wicket_count"] == 0) & (d["runs_byes"] + d["runs_legbyes"] == 0)]
    expected = plain["runs_batter"].map({0: "dot", 1: "1", 2: "2", 3: "3", 4: "4", 5: "3", 6: "6", 7: "3"})
    assert (plain["outcome"].astype(str) == expected).all()


@pytest.mark.parametrize(
    ("season", "start", "year"),
    [
        ("2013", date(2013, 4, 3), 2013),
        (2013, date(2013, 4, 3), 2013),
        ("2020/21", date(2020, 9, 19), 2020),
        ("2007/08", date(2008, 4, 18), 2008),
    ],
)
def test_season_year(season, start, year):
    assert season_year(season, start) == year


def test_abandoned_match_yields_no_rows_and_no_error():
    def abandon(doc):
        doc["innings"] = []
        doc["info"]["outcome"] = {"result": "no result"}

    parsed = parse_match(edited("1178424", abandon))
    assert parsed.deliveries == [] and parsed.innings == []


def test_a_file_of_its_info_alone_is_a_match_before_its_first_ball():
    """The sides, the venue, the date and the toss written down before the match: no innings at all."""
    before = parse_match(edited("1178424", lambda doc: doc.pop("innings")))
    assert before.innings == [] and before.deliveries == []
    full = parse_match(match_file("1178424"))
    assert before.info["toss_decision"] == full.info["toss_decision"] in ("bat", "field")
    assert before.info["team1_players"] == full.info["team1_players"]


def test_who_came_in_during_the_match_is_kept_by_side():
    """1473438 (IPL 2025): D Padikkal came in for Bengaluru and VG Arora for Kolkata as impact players; both are in
    info.players, neither in the XI named at the toss."""
    info = parse_match(match_file("1473438")).info
    came_in = {info["team1"]: info["team1_came_in"], info["team2"]: info["team2_came_in"]}
    assert came_in == {"Kolkata Knight Riders": "VG Arora", "Royal Challengers Bengaluru": "D Padikkal"}
    assert "D Padikkal" in info["team2_players"].split(";")
    assert parse_match(match_file("1178424")).info["team1_came_in"] is None  # 2019: no impact players


BAD = {
    "runs.batter": (
        lambda doc: doc["innings"][0]["overs"][2]["deliveries"][1]["runs"].update(batter="four"),
        "innings[0].overs[2].deliveries[1].runs.batter",
        "expected int, got 'four'",
    ),
    "toss decision": (
        lambda doc: doc["info"]["toss"].update(decision="bowl"),
        "info.toss.decision",
        "'bowl': must be 'bat' or 'field'",
    ),
    "version": (lambda doc: doc["meta"].update(data_version="2.0.0"), "meta.data_version", "unsupported"),
    "batter type": (
        lambda doc: doc["innings"][1]["overs"][0]["deliveries"][0].update(batter=7),
        "innings[1].overs[0].deliveries[0].batter",
        "expected str",
    ),
    "team": (lambda doc: doc["innings"][0].update(team="Nobody XI"), "innings[0].team", "not one of info.teams"),
    # A winner that is neither side was credited to the other side by the valuation (issue 53).
    "winner": (
        lambda doc: doc["info"]["outcome"].update(winner="Royal Challengers Bengaluru"),
        "info.outcome.winner",
        "'Royal Challengers Bengaluru' is not one of info.teams",
    ),
    "toss winner": (
        lambda doc: doc["info"]["toss"].update(winner="Nobody XI"),
        "info.toss.winner",
        "is not one of info.teams",
    ),
    "season far from the date": (
        lambda doc: doc["info"].update(season="2010"),
        "info.season",
        "2010 is more than a year from the match's date",
    ),
    "players": (
        lambda doc: doc["info"]["players"].update({"Sunrisers Hyderabad": ["DA Warner", 7]}),
        "info.players.Sunrisers Hyderabad",
        "expected a list of player names",
    ),
    "replacement's side": (
        lambda doc: doc["innings"][0]["overs"][0]["deliveries"][0].update(
            replacements={"match": [{"in": "A", "out": "B", "team": "Nobody XI", "reason": "impact_player"}]}
        ),
        "innings[0].overs[0].deliveries[0].replacements.match[0].team",
        "'Nobody XI' is not one of info.teams",
    ),
    # Impossible numbers, each named for what is wrong with it.
    "negative batter": (lambda doc: ball(doc, batter=-1, extras={}), "deliveries[1].runs.batter", "negative: -1"),
    "huge extras": (
        lambda doc: ball(doc, batter=0, extras={"byes": 10**18}),
        "deliveries[1].runs.extras",
        "1000000000000000000 extras off one ball is not possible",
    ),
    "negative wides": (
        lambda doc: ball(doc, batter=0, extras={"wides": -1, "byes": 1}),
        "deliveries[1].extras.wides",
        "-1 is not a number of runs one ball can give",
    ),
    # The laws allow four to eight balls an over: 10**9 once asked the simulator for 164 GiB.
    "balls per over": (lambda doc: doc["info"].update(balls_per_over=10**9), "info.balls_per_over", "must be 4 to 8"),
    "no balls per over": (lambda doc: doc["info"].update(balls_per_over=0), "info.balls_per_over", "0: must be 4 to 8"),
    "no overs": (lambda doc: doc["info"].update(overs=0), "info.overs", "0: an innings of no overs"),
    "extras disagree": (
        lambda doc: ball(doc, batter=0, extras={"wides": 2}, runs_extras=1),
        "deliveries[1].extras",
        "wides 2 != runs.extras 1",
    ),
}


def test_a_t20_said_to_be_of_50_overs_is_read_as_20_and_an_odi_keeps_its_50():
    """Nine 20-over T20s of Cricsheet's men's zip say `overs: 50` (1473145 among them): the features and the
    simulator would read the first innings' remaining balls from it."""
    assert parse_match(edited("1082591", lambda doc: doc["info"].update(overs=50))).info["scheduled_overs"] == 20
    assert parse_match(edited("1082591", lambda doc: doc["info"].update(overs=17))).info["scheduled_overs"] == 17
    odi = parse_match(edited("1082591", lambda doc: doc["info"].update(overs=50, match_type="ODI")))
    assert odi.info["scheduled_overs"] == 50


def ball(doc: dict, batter: int, extras: dict, runs_extras: int | None = None) -> None:
    """Set the runs and extras of one delivery of 1082591 (innings 1, over 3, ball 2), total to match."""
    d = doc["innings"][0]["overs"][2]["deliveries"][1]
    extra = sum(extras.values()) if runs_extras is None else runs_extras
    d["runs"] = {"batter": batter, "extras": extra, "total": batter + extra}
    d["extras"] = extras


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_field_names_file_match_and_field(case):
    edit, field, problem = BAD[case]
    with pytest.raises(MatchFileError) as err:
        parse_match(edited("1082591", edit))
    message = str(err.value)
    assert message.startswith("1082591-edited.json: match 1082591: field ")
    assert field in message and problem in message
    assert "\n" not in message


def test_truncated_json_names_the_file():
    raw = match_file("1082591").raw
    with pytest.raises(MatchFileError, match=r"^cut\.json: match 1082591: field \(file\): invalid JSON"):
        parse_match(MatchFile("cut.json", "1082591", raw[: len(raw) // 2]))


def test_json_that_is_not_a_match_is_a_bad_file_with_its_reason():
    with pytest.raises(
        MatchFileError,
        match=r"package\.json: .* not a Cricsheet match \(no meta or info\): an object "
        r"with keys name",
    ):
        parse_match(MatchFile("package.json", "package", b'{"name": "x"}'))
    with pytest.raises(MatchFileError, match="not a Cricsheet match .*: a JSON list"):
        parse_match(MatchFile("list.json", "list", b"[1, 2]"))


def test_a_file_that_is_not_utf8_is_named_as_such():
    latin1 = match_file("1082591").raw.decode().replace("DA Warner", "DA Wärner").encode("latin-1")
    with pytest.raises(MatchFileError, match=r"^l1\.json: match 1082591: field \(file\): not UTF-8 text \(byte \d+\)$"):
        parse_match(MatchFile("l1.json", "1082591", latin1))


def test_gzipped_match_files_are_read_and_a_broken_one_is_named():
    import gzip

    raw = match_file("1082591").raw
    plain = parse_match(MatchFile("1082591.json", "1082591", raw))
    packed = parse_match(MatchFile("1082591.json.gz", "1082591", gzip.compress(raw)))
    assert packed.deliveries == plain.deliveries and packed.info == plain.info
    with pytest.raises(MatchFileError, match=r"^bad\.json\.gz: match bad: field \(file\): not a readable gzip file"):
        parse_match(MatchFile("bad.json.gz", "bad", gzip.compress(raw)[:100]))


def test_a_gzip_that_unpacks_past_the_limit_is_refused_without_holding_it(monkeypatch):
    """A few kilobytes that unpack to more than a match file may be: named and refused, the read bounded."""
    import gzip

    from cricket_attn.data import cricsheet

    monkeypatch.setattr(cricsheet, "MAX_MATCH_BYTES", 1 << 20)
    bomb = gzip.compress(b" " * (3 << 20))
    assert len(bomb) < 10_000
    with pytest.raises(MatchFileError, match=r"bomb.json.gz: match bomb: field \(file\): unpacks to more than"):
        parse_match(MatchFile("bomb.json.gz", "bomb", bomb))
    real = gzip.compress((FIXTURES / "1082591.json").read_bytes())
    assert parse_match(MatchFile("1082591.json.gz", "1082591", real)).info["season"] == 2017
