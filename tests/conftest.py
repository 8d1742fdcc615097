"""Shared fixtures: real Cricsheet match files and the tables built from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cricket_attn.config import load_data_config
from cricket_attn.deliveries import Ingested, PhaseRules, build_tables
from cricket_attn.sources import MatchFile, iter_match_files

FIXTURES = Path(__file__).parent / "fixtures" / "cricsheet"


@pytest.fixture(scope="session")
def data_config():
    return load_data_config("ipl")


@pytest.fixture(scope="session")
def phases(data_config) -> PhaseRules:
    return PhaseRules.from_config(data_config.phases)


@pytest.fixture(scope="session")
def fixture_tables(phases) -> Ingested:
    """The deliveries and matches tables of the 20 real fixture matches."""
    return build_tables(iter_match_files([FIXTURES]), phases)


@pytest.fixture(scope="session")
def deliveries(fixture_tables):
    return fixture_tables.deliveries


def match_file(match_id: str) -> MatchFile:
    path = FIXTURES / f"{match_id}.json"
    return MatchFile(str(path), match_id, path.read_bytes())


@pytest.fixture(scope="session")
def ipl_tables(phases, data_config) -> Ingested:
    """The whole embedded IPL archive (downloaded once into data/raw/ if it is not there yet)."""
    from cricket_attn.config import project_path
    from cricket_attn.deliveries import load_tables

    return load_tables(None, phases, data_dir=project_path(data_config.data_dir))
