"""What a person sees while a long command works: bars on a terminal, plain lines elsewhere."""

from __future__ import annotations

import pytest

from cricket_attn import progress


def test_auto_is_lines_off_a_terminal_and_modes_are_checked():
    # Under pytest standard output is captured, not a terminal: what CI and a log file get.
    assert progress.resolve("auto") == "lines"
    assert [progress.resolve(m) for m in ("bar", "lines", "none")] == ["bar", "lines", "none"]
    with pytest.raises(ValueError, match="progress='bars': choose one of auto, bar, lines, none"):
        progress.resolve("bars")


def test_track_passes_every_item_and_draws_a_bar_only_when_asked(capsys):
    items = [f"{m}.json" for m in range(7)]
    assert list(progress.track(iter(items), "reading match files", unit="file", mode="lines")) == items
    assert capsys.readouterr().err == ""
    assert list(progress.track(iter(items), "reading match files", unit="file", mode="bar")) == items
    drawn = capsys.readouterr().err
    assert "reading match files: 0file" in drawn  # the bar, drawn on standard error


def test_stopwatch_reads_in_seconds_then_minutes():
    clock = progress.Stopwatch()
    assert str(clock) == "0 s"
    clock.start -= 150
    assert str(clock) == "2.5 min"
