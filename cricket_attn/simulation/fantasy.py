"""Fantasy points from each player's simulated line: a scoring table from conf/fantasy/ (`FantasyTable`),
applied draw by draw to a side's figures (`cricket_attn.simulation.lines.side_draws`), so that the points of
two players of one side keep the correlation of the simulations they come from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from omegaconf import OmegaConf

from cricket_attn.config import CONF_DIR
from cricket_attn.simulation.lines import Draws


class FantasyError(ValueError):
    """A scoring table that cannot be applied, named by its file and key."""


@dataclass(frozen=True)
class FantasyTable:
    """conf/fantasy/<name>.yaml as numbers (its comments say what each is)."""

    name: str
    playing: float
    run: float
    four: float
    six: float
    milestones: tuple[tuple[int, float], ...]  # (runs, points), the highest reached counts alone
    duck: float
    wicket: float
    hauls: tuple[tuple[int, float], ...]
    economy_min_balls: int
    economy_bands: tuple[tuple[float, float, float], ...]  # (from, below, points)
    strike_rate_min_balls: int
    strike_rate_bands: tuple[tuple[float, float, float], ...]

    @classmethod
    def load(cls, name: str = "t20") -> FantasyTable:
        path = CONF_DIR / "fantasy" / f"{name}.yaml"
        if not path.is_file():
            have = sorted(p.stem for p in path.parent.glob("*.yaml"))
            raise FantasyError(f"--fantasy {name}: no {path} (have: {', '.join(have)})")
        return cls.from_mapping(OmegaConf.to_container(OmegaConf.load(path)), str(path))

    @classmethod
    def from_mapping(cls, t: Mapping, where: str) -> FantasyTable:
        def number(*keys, whole: bool = False):
            value = t
            for key in keys:
                if not isinstance(value, Mapping) or key not in value:
                    raise FantasyError(f"{where}: {'.'.join(map(str, keys))}: missing")
                value = value[key]
            if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
                raise FantasyError(
                    f"{where}: {'.'.join(map(str, keys))}: {value!r} is not a {'whole ' if whole else ''}number"
                )
            if not np.isfinite(value):
                raise FantasyError(f"{where}: {'.'.join(map(str, keys))}: {value!r} is not finite")
            return value

        def steps(*keys):
            table = t.get(keys[0], {}).get(keys[1]) if isinstance(t.get(keys[0]), Mapping) else None
            if not isinstance(table, Mapping) or not table:
                raise FantasyError(f"{where}: {'.'.join(keys)}: expected a map of thresholds to points")
            if not all(isinstance(k, int) and not isinstance(k, bool) for k in table):
                raise FantasyError(f"{where}: {'.'.join(keys)}: the thresholds must be whole numbers")
            return tuple(sorted((k, number(*keys, k)) for k in table))

        def bands(key):
            rows = t.get(key, {}).get("bands") if isinstance(t.get(key), Mapping) else None
            numbers = lambda r: all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)
            if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == 3 and numbers(r) for r in rows):
                raise FantasyError(f"{where}: {key}.bands: expected rows of three numbers [from, below, points]")
            out = tuple(tuple(float(x) for x in r) for r in rows)
            if any(not lo < hi for lo, hi, _ in out):
                raise FantasyError(f"{where}: {key}.bands: each row's from must be below its below")
            ordered = sorted(out)
            if any(a[1] > b[0] for a, b in zip(ordered, ordered[1:])):
                raise FantasyError(f"{where}: {key}.bands: the bands overlap")
            return out

        return cls(
            name=where,
            playing=number("playing"),
            run=number("batting", "run"),
            four=number("batting", "four"),
            six=number("batting", "six"),
            milestones=steps("batting", "milestones"),
            duck=number("batting", "duck"),
            wicket=number("bowling", "wicket"),
            hauls=steps("bowling", "hauls"),
            economy_min_balls=number("economy", "min_balls", whole=True),
            economy_bands=bands("economy"),
            strike_rate_min_balls=number("strike_rate", "min_balls", whole=True),
            strike_rate_bands=bands("strike_rate"),
        )

    def points(self, draws: Draws) -> pd.DataFrame:
        """Each player's points in each simulation (`side_draws`' rows and players)."""
        value = lambda figure: draws[figure].to_numpy(np.float64)
        runs, balls, wickets = value("runs"), value("balls"), value("wickets")
        bowled, conceded = value("bowled_balls"), value("conceded")
        total = (
            self.playing
            + self.run * runs
            + self.four * value("fours")
            + self.six * value("sixes")
            + highest(runs, self.milestones)
            + self.duck * (draws["out"].to_numpy() & (runs == 0))
            + self.wicket * wickets
            + highest(wickets, self.hauls)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            economy = np.where(bowled >= self.economy_min_balls, 6 * conceded / bowled, np.nan)
            strike_rate = np.where(balls >= self.strike_rate_min_balls, 100 * runs / balls, np.nan)
        total += banded(economy, self.economy_bands) + banded(strike_rate, self.strike_rate_bands)
        return pd.DataFrame(total, columns=draws["runs"].columns)


def highest(x: np.ndarray, steps: tuple[tuple[int, float], ...]) -> np.ndarray:
    """The points of the highest step reached (0 below the first)."""
    out = np.zeros_like(x, dtype=np.float64)
    for threshold, points in steps:  # ascending: a higher step reached replaces a lower one
        out = np.where(x >= threshold, points, out)
    return out


def banded(x: np.ndarray, bands: tuple[tuple[float, float, float], ...]) -> np.ndarray:
    """The points of the band each value falls in (0 in none, and for NaN: too few balls)."""
    out = np.zeros_like(x, dtype=np.float64)
    for lo, hi, points in bands:
        out = np.where((x >= lo) & (x < hi), points, out)
    return out
