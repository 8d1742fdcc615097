"""Every men's T20 league in one table: competitions, the split by year, sources that share matches, downloads."""

from __future__ import annotations

import functools
import http.server
import threading
import zipfile

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from cricket_attn.config import load_data_config
from cricket_attn.data import sources
from cricket_attn.data.competitions import ASSOCIATE_T20IS, FULL_MEMBER_T20IS
from cricket_attn.data.deliveries import load_tables
from cricket_attn.data.features import entity_key, venue_key
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.data.sources import SourceError
from cricket_attn.data.splits import SeasonSplit
from cricket_attn.inference.reading import unknown_to
from tests.conftest import FIXTURES

LEAGUES = FIXTURES.parent / "cricsheet_t20"  # five real matches of other competitions (README)


@pytest.fixture(scope="module")
def leagues(phases, tmp_path_factory):
    return load_tables([LEAGUES], phases, data_dir=tmp_path_factory.mktemp("leagues"))


def test_each_match_has_its_competition_and_team_type(leagues):
    m = leagues.matches.set_index("match_id")
    assert m.loc["1386137", "competition"] == "Big Bash League"
    assert m.loc["1417822", "competition"] == "The Hundred"  # "The Hundred Men's Competition" in the file
    assert m.loc["1347699", "competition"] == "T20 Blast"  # "Vitality Blast" that year
    assert m.loc["1479576", "competition"] == FULL_MEMBER_T20IS  # India v South Africa
    assert m.loc["1503466", "competition"] == ASSOCIATE_T20IS  # Nepal v Oman, a World Cup qualifier
    assert m["team_type"].to_dict() == {
        "1347699": "club", "1386137": "club", "1417822": "club", "1479576": "international", "1503466": "international"
    }  # fmt: skip
    d = leagues.deliveries
    by_match = d.groupby("match_id", observed=True)[["competition", "team_type"]].first()
    assert by_match["competition"].to_dict() == m["competition"].to_dict()
    # The Hundred's sets of five: 100 balls an innings at most.
    hundred = d[d["match_id"] == "1417822"]
    assert (hundred["balls_per_over"] == 5).all() and hundred.groupby("innings")["legal_ball_index"].max().max() < 100


def test_a_season_across_the_new_year_is_split_by_the_match_year(leagues):
    """A BBL match of the 2023/24 season played in January 2024 is a 2024 ball: validation, not training."""
    d = leagues.deliveries
    bbl = d[d["match_id"] == "1386137"]
    assert str(bbl["date"].iloc[0].date()) == "2024-01-24" and (bbl["season"] == 2024).all()
    split = SeasonSplit.from_config(load_data_config("t20").split)
    assert set(split.label(bbl["season"])) == {"validation"}
    assert set(split.label(d.loc[d["match_id"] == "1479576", "season"])) == {"test"}  # December 2025


def test_pooled_sources_keep_one_copy_of_each_match_from_the_first_source(phases, tmp_path):
    """The IPL archive and the T20 zip share the IPL's match ids: the first source's copy is kept, the other
    counted as a duplicate (not a bad file: nothing is skipped), so the IPL's balls are the IPL archive's."""
    ipl_copy = (FIXTURES / "1473438.json").read_bytes().replace(b'"SP Narine"', b'"Sunil Narine"')
    pooled = tmp_path / "t20s_json.zip"
    with zipfile.ZipFile(pooled, "w") as z:
        z.writestr("1473438.json", ipl_copy)
        for f in LEAGUES.glob("*.json"):
            z.write(f, f.name)
    tables = load_tables([FIXTURES, pooled], phases, data_dir=tmp_path / "data")
    assert len(tables.matches) == 20 + 5 and not tables.skipped
    assert [s.match_id for s in tables.duplicates] == ["1473438"]
    assert "content different from" in tables.duplicates[0].reason and "which was kept" in tables.duplicates[0].reason
    match = tables.deliveries[tables.deliveries["match_id"] == "1473438"]
    assert (match["batter"] == "SP Narine").any() and not (match["batter"] == "Sunil Narine").any()
    again = load_tables([FIXTURES, pooled], phases, data_dir=tmp_path / "data")  # from the cache, alike
    assert [s.reason for s in again.duplicates] == [s.reason for s in tables.duplicates]


def test_the_t20_config_is_the_ipl_config_with_both_sources():
    ipl, t20 = load_data_config("ipl"), load_data_config("t20")
    assert list(t20.sources) == ["embedded", "cricsheet:t20s_male"]  # Cricsheet's own download: no path outside
    plain = lambda cfg: {k: v for k, v in OmegaConf.to_container(cfg).items() if k not in ("sources", "trees")}
    # The pooled recipe as measured: records as of the day, no embedding of a player, no histories; the trees
    # at twice the IPL's learning rate and of the size they were measured at (31 leaves, every feature), the rest
    # of their settings the IPL's.
    assert t20.records is not None and t20.min_count is None and t20.history_balls == 0
    assert plain(t20) == plain(ipl) and t20.teacher.folds == 2
    assert {**ipl.trees, "learning_rate": 0.1, "num_leaves": 31, "feature_fraction": 1.0} == dict(t20.trees)
    assert sources.configured_sources(t20.sources) == ["embedded", "cricsheet:t20s_male"]
    assert sources.configured_sources(["x.zip"]) == [str(sources.project_path("x.zip").resolve())]


def test_players_are_keyed_by_registry_id_and_grounds_by_one_name(leagues):
    d = leagues.deliveries
    assert (entity_key(d, "batter") == d["batter_id"].astype(str).to_numpy()).all()
    ground = pd.Series(
        ["Wankhede Stadium", "Wankhede Stadium, Mumbai", "M.Chinnaswamy Stadium", "M Chinnaswamy Stadium"]
    )
    assert list(venue_key(ground)) == ["Wankhede Stadium"] * 2 + ["M Chinnaswamy Stadium"] * 2
    # A name several grounds share keeps its city, from the file's `city` or after the comma.
    shared = pd.Series(["County Ground", "County Ground, Bristol", "County Ground", "County Ground, Hove"])
    cities = pd.Series(["Taunton", None, "Brighton", None])
    assert list(venue_key(shared, cities)) == [
        "County Ground, Taunton", "County Ground, Bristol", "County Ground, Hove", "County Ground, Hove"
    ]  # fmt: skip
    # Players sharing a name (every batter of one match renamed "x") stay as many players as their ids.
    renamed = d.copy()
    first = renamed["batter"].astype(str).iloc[0]
    renamed["batter"] = renamed["batter"].astype(str).where(renamed["match_id"] != "1503466", "x")
    enc = SequenceEncoder.fit(renamed, min_count=1)
    assert len(enc.batters) == 1 + renamed["batter_id"].nunique()
    assert enc.player_keys("batter", [first, "Nobody"]) == [d["batter_id"].astype(str).iloc[0], "Nobody"]


def test_a_records_model_names_what_had_no_record_before_the_match(fixture_tables):
    """A model reading records as of the day knows every player and ground it has no embedding for by its
    record: unknown to it are those with no ball before the match's day (a debutant), not every name."""
    d = fixture_tables.deliveries
    last = d[d["date"] == d["date"].max()]
    renamed = d.astype({"batter": object, "batter_id": object})
    first_batter = renamed.index[renamed["match_id"] == last["match_id"].iloc[0]][0]
    renamed.loc[first_batter, ["batter", "batter_id"]] = ["A Debutant", "debut000"]
    encoder = SequenceEncoder.fit_encode(renamed, min_count=None, records={})[0]
    match = renamed[renamed["match_id"] == last["match_id"].iloc[0]]
    earlier = renamed[renamed["date"] < last["date"].iloc[0]]
    unknown = unknown_to(encoder, match)
    for what, column in (("batters", "batter"), ("bowlers", "bowler"), ("venues", "venue")):
        seen = set(entity_key(earlier, column))
        expected = {n for n, k in zip(match[column].astype(str), entity_key(match, column)) if k not in seen}
        assert set(unknown[what]) == expected, what
    assert "A Debutant" in unknown["batters"] and len(unknown["batters"]) < match["batter"].nunique()
    assert unknown["competitions"] == []  # the IPL, with every earlier match's balls


def test_a_model_of_one_league_names_the_competitions_and_grounds_it_does_not_know(fixture_tables, leagues):
    encoder = SequenceEncoder.fit_encode(fixture_tables.deliveries, min_count=5, competition_min_count=500)[0]
    assert encoder.competitions.tokens == ["", "Indian Premier League"]
    unknown = unknown_to(encoder, leagues.deliveries)
    assert set(unknown["competitions"]) == {"Big Bash League", "The Hundred", "T20 Blast", FULL_MEMBER_T20IS,
                                            ASSOCIATE_T20IS}  # fmt: skip
    assert set(unknown["venues"]) == set(leagues.deliveries["venue"].astype(str))  # no IPL ground among them
    known = leagues.deliveries.iloc[:1].assign(venue="Wankhede Stadium, Mumbai", city="Mumbai")
    assert unknown_to(encoder, known)["venues"] == []  # the IPL's "Wankhede Stadium", written another way
    encoded = encoder.encode(leagues.deliveries).tensors
    assert (encoded["competition"][encoded["mask"]] == 0).all()  # the unknown: the model adds nothing for it
    # One league's competition rates never varied in training: another league's are read as 0, not as a
    # value many spreads away (a float32 spread of rounding would make it thousands).
    start = encoder.block_start("competition")
    assert np.isinf(encoder.std[start:]).all() and (encoded["numeric"][..., start:] == 0).all()
    assert np.abs(encoded["numeric"][encoded["mask"]].numpy()).max() < 50


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """An HTTP server on loopback serving `tmp_path/site`, and a list of the paths it was asked for."""
    site = tmp_path / "site"
    site.mkdir()
    asked: list[str] = []

    class Handler(_Quiet):
        def do_GET(self):
            asked.append(self.path)
            super().do_GET()

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", site, asked
    httpd.shutdown()
    httpd.server_close()


def test_cricsheet_downloads_are_fetched_once_and_read(server, phases, tmp_path, monkeypatch):
    base, site, asked = server
    monkeypatch.delenv(sources.CRICSHEET_COPY_ENV, raising=False)
    with zipfile.ZipFile(site / "bbl_json.zip", "w") as z:
        z.write(LEAGUES / "1386137.json", "1386137.json")
    monkeypatch.setattr(sources, "CRICSHEET_DOWNLOADS", base)
    data_dir = tmp_path / "data"
    tables = load_tables(["cricsheet:bbl"], phases, data_dir=data_dir)
    assert list(tables.matches["match_id"]) == ["1386137"] and asked == ["/bbl_json.zip"]
    assert (data_dir / "raw" / "bbl_json.zip").read_bytes() == (site / "bbl_json.zip").read_bytes()
    again = load_tables([f"{base}bbl_json.zip"], phases, data_dir=data_dir)  # the same file by its address
    assert asked == ["/bbl_json.zip"] and len(again.matches) == 1  # not fetched again


def test_a_local_copy_of_cricsheet_is_read_where_it_lies_and_nothing_is_downloaded(
    server, phases, tmp_path, monkeypatch
):
    """CRICKET_ATTN_CRICSHEET_DIR names a folder of Cricsheet's zips: `cricsheet:<name>` is read from there
    (the same tables, and the same cache, as the downloaded file), and the server is never asked."""
    base, site, asked = server
    copy = tmp_path / "copy"
    copy.mkdir()
    with zipfile.ZipFile(copy / "t20s_male_json.zip", "w") as z:
        for f in LEAGUES.glob("*.json"):
            z.write(f, f.name)
    (site / "t20s_male_json.zip").write_bytes((copy / "t20s_male_json.zip").read_bytes())
    monkeypatch.setattr(sources, "CRICSHEET_DOWNLOADS", base)
    monkeypatch.setenv(sources.CRICSHEET_COPY_ENV, str(copy))
    data_dir = tmp_path / "data"
    tables = load_tables(["cricsheet:t20s_male"], phases, data_dir=data_dir)
    assert len(tables.matches) == 5 and tables.sources == [str(copy / "t20s_male_json.zip")]
    assert asked == [] and not (data_dir / "raw").exists()
    # Without the copy the same file is downloaded, once; its table is the copy's, from the same cache.
    monkeypatch.delenv(sources.CRICSHEET_COPY_ENV)
    downloaded = load_tables(["cricsheet:t20s_male"], phases, data_dir=data_dir)
    assert asked == ["/t20s_male_json.zip"] and downloaded.key == tables.key
    assert downloaded.sources == [str(data_dir / "raw" / "t20s_male_json.zip")]


def test_offline_without_a_copy_names_the_file_and_where_to_put_it(phases, tmp_path, monkeypatch):
    """No internet and no local copy (or a copy folder without that zip): one line that names the file to
    download and where it goes, and nothing is left behind."""
    data_dir = tmp_path / "data"
    with socket_closed() as port:
        monkeypatch.setattr(sources, "CRICSHEET_DOWNLOADS", f"http://127.0.0.1:{port}/")
        monkeypatch.delenv(sources.CRICSHEET_COPY_ENV, raising=False)
        with pytest.raises(SourceError) as err:
            load_tables(["cricsheet:t20s_male"], phases, data_dir=data_dir)
        raw = data_dir / "raw" / "t20s_male_json.zip"
        assert str(err.value) == (
            f"http://127.0.0.1:{port}/t20s_male_json.zip: cannot download ([Errno 111] Connection refused); "
            f"download it by hand into {raw}, or name a folder holding it in CRICKET_ATTN_CRICSHEET_DIR"
        )
        monkeypatch.setenv(sources.CRICSHEET_COPY_ENV, str(tmp_path))
        with pytest.raises(SourceError, match=f"CRICKET_ATTN_CRICSHEET_DIR={tmp_path} has no t20s_male_json.zip; "):
            load_tables(["cricsheet:t20s_male"], phases, data_dir=data_dir)
    assert not raw.exists() and not list((data_dir / "cache").glob("deliveries-*"))


def test_a_download_that_fails_is_one_line_and_leaves_nothing(server, phases, tmp_path):
    base, _, _ = server
    data_dir = tmp_path / "data"
    with pytest.raises(SourceError, match=r"bbl_json.zip: the server answered 404 .*nothing downloaded$"):
        load_tables([f"{base}bbl_json.zip"], phases, data_dir=data_dir)
    with socket_closed() as port:
        with pytest.raises(SourceError, match=r"cannot download \(.*\); offline, give the path of a copy instead$"):
            load_tables([f"http://127.0.0.1:{port}/t20s_male_json.zip"], phases, data_dir=data_dir)
    assert not list((data_dir / "raw").iterdir())  # nothing half written


def test_a_download_cut_short_or_not_a_zip_leaves_nothing_and_a_broken_copy_is_fetched_again(server, phases, tmp_path):
    """A reply shorter than its Content-Length, a web page sent with 200, a zip with no match in it: one line
    each, and nothing in data/raw/ for the next run to trust. A broken file already there is fetched again."""
    base, site, asked = server
    whole = site / "bbl_json.zip"
    with zipfile.ZipFile(whole, "w") as z:
        z.write(LEAGUES / "1386137.json", "1386137.json")
    (site / "page_json.zip").write_text("<!DOCTYPE html><html><body>Sign in</body></html>")
    with zipfile.ZipFile(site / "empty_json.zip", "w") as z:
        z.writestr("README.txt", "nothing here")
    data_dir, raw = tmp_path / "data", tmp_path / "data" / "raw"
    with cut_short(whole) as short:
        with pytest.raises(
            SourceError, match=rf"cut_json.zip: the download stopped at [\d,]+ of {whole.stat().st_size:,}"
        ):
            load_tables([f"{short}cut_json.zip"], phases, data_dir=data_dir)
    with pytest.raises(
        SourceError, match=r"page_json.zip: the server sent a web page, not a Cricsheet file; nothing kept$"
    ):
        load_tables([f"{base}page_json.zip"], phases, data_dir=data_dir)
    with pytest.raises(
        SourceError, match=r"empty_json.zip: the file is a zip with no match files in it; nothing kept$"
    ):
        load_tables([f"{base}empty_json.zip"], phases, data_dir=data_dir)
    assert not list(raw.iterdir())
    (raw / "bbl_json.zip").write_bytes(whole.read_bytes()[:1000])  # left by a version that kept broken files
    tables = load_tables([f"{base}bbl_json.zip"], phases, data_dir=data_dir)
    assert list(tables.matches["match_id"]) == ["1386137"] and asked.count("/bbl_json.zip") == 1
    assert (raw / "bbl_json.zip").read_bytes() == whole.read_bytes()


class cut_short:
    """A loopback server that announces `file`'s whole length and closes after half of it."""

    def __init__(self, file):
        self.body = file.read_bytes()

    def __enter__(self) -> str:
        body = self.body

        class Handler(_Quiet):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class socket_closed:
    """A loopback port nothing listens on."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]  # bound, never listening: a connection is refused

    def __exit__(self, *exc):
        self.sock.close()
