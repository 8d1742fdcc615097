"""The deliveries table reproduces each match's official result."""

from __future__ import annotations

import pytest

from cricket_attn.commands.official_results import main
from cricket_attn.data.official_results import check_results


def test_fixture_results_are_reproduced(fixture_tables):
    check = check_results(fixture_tables.deliveries, fixture_tables.matches)
    # 20 fixtures: one no result, one DLS and one super over are not "decided" matches to check;
    # every chase but the DLS one has a target of the first-innings total plus one.
    assert (check.checked, check.agree, check.problems) == (17, 17, [])
    assert check.chases_checked == check.targets_agree == 19


def test_a_lost_run_is_caught(fixture_tables):
    d = fixture_tables.deliveries.copy()
    first = d.index[(d["match_id"] == "1082591") & (d["innings"] == 1)][0]
    d.loc[first, "runs_total"] += 1
    check = check_results(d, fixture_tables.matches)
    assert check.agree == check.checked - 1
    assert any(p.startswith("1082591: recorded Sunrisers Hyderabad by 35 runs") for p in check.problems)
    assert any(p.startswith("1082591: target") for p in check.problems)


@pytest.mark.slow
def test_the_whole_ipl_archive(ipl_tables, capsys):
    check = check_results(ipl_tables.deliveries, ipl_tables.matches)
    assert (check.checked, check.agree) == (1191, 1191)
    assert check.chases_checked == check.targets_agree and check.problems == []
    assert main([]) == 0
    assert "1,191 of 1,191" in capsys.readouterr().out
