"""conf/ and the code agree: a model or data module built from Python with its defaults is the one conf/ builds,
and the data config reads as Hydra composes it."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from cricket_attn.config import CONF_DIR, DEFAULT_EXPERIMENT, load_data_config, project_path
from cricket_attn.data.datamodule import CricketDataModule
from cricket_attn.data.features import RATE_STRENGTH
from cricket_attn.data.records import RecordSettings
from cricket_attn.data.teacher import fit_teacher
from cricket_attn.model import ModelConfig
from cricket_attn.training.lit_module import BallOutcomeModule


def test_the_models_defaults_are_conf():
    """Every key conf/model/transformer.yaml sets is ModelConfig's default (lists as tuples), and every
    field without a default is one the data encoder gives."""
    conf = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "model" / "transformer.yaml"))
    defaults = {f.name: f.default for f in fields(ModelConfig) if f.default is not MISSING}
    assert conf, "conf/model/transformer.yaml sets nothing"
    for key, value in conf.items():
        assert key in defaults, f"model.{key} is in conf/ but ModelConfig has no default for it"
        expected = tuple(value) if isinstance(value, list) else value
        assert defaults[key] == expected, f"model.{key}: ModelConfig {defaults[key]!r}, conf/ {value!r}"
    required = {f.name for f in fields(ModelConfig) if f.default is MISSING}
    assert required == {"n_numeric", "n_batters", "n_bowlers", "n_venues", "n_competitions", "n_team_types"}


def test_the_data_modules_defaults_are_conf():
    """Every key conf/data/ipl.yaml sets is CricketDataModule's default or a required argument; built with
    only the required ones from conf/, it has conf's settings."""
    conf = load_data_config("ipl")
    params = inspect.signature(CricketDataModule).parameters
    plain = OmegaConf.to_container(conf, resolve=False)
    required = {name for name, p in params.items() if p.default is inspect.Parameter.empty}
    assert required == {"phases", "split", "teacher", "records", "trees"}
    for key, value in plain.items():
        if key == "_target_" or key in required:
            continue
        assert key in params, f"data.{key} is in conf/ but not an argument of CricketDataModule"
        if key == "seed":  # ${seed}: the run's
            continue
        assert params[key].default == value, f"data.{key}: CricketDataModule {params[key].default!r}, conf/ {value!r}"
    built = CricketDataModule(**{key: OmegaConf.to_container(conf[key]) for key in required})
    composed = CricketDataModule(
        **{k: v for k, v in OmegaConf.to_container(conf).items() if k not in ("_target_", "seed")}
    )
    settings = ("sources", "data_dir", "phases", "split", "min_count", "rate_strength", "batch_size",
                "season_half_life", "teacher", "trees", "records", "competition_min_count")  # fmt: skip
    for name in settings:
        assert getattr(built, name) == getattr(composed, name), name


def test_the_other_defaults_in_code_are_conf():
    """The optimiser's settings of BallOutcomeModule, the records' RecordSettings and the teacher's rate
    strength, built from Python with their defaults, are conf/'s; the teacher's folds has no default."""
    optim = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml").optim)
    module = inspect.signature(BallOutcomeModule).parameters
    assert optim and {key: module[key].default for key in optim} == optim
    data = OmegaConf.to_container(load_data_config("ipl"))
    assert RecordSettings().to_dict() == data["records"]
    teacher = inspect.signature(fit_teacher).parameters
    assert teacher["rate_strength"].default == data["rate_strength"] == RATE_STRENGTH  # every rates fit's default
    assert teacher["folds"].default is inspect.Parameter.empty
    # The commands' --experiment default is the experiment training logs to.
    assert OmegaConf.load(CONF_DIR / "logger" / "mlflow.yaml").experiment_name == DEFAULT_EXPERIMENT


def test_a_data_config_reads_as_hydra_composes_it():
    """data=t20 is data=ipl with its own settings over it; an unknown name lists the ones there are."""
    ipl, t20 = load_data_config("ipl"), load_data_config("t20")
    assert t20.split == ipl.split and t20.teacher == ipl.teacher
    assert list(t20.sources) != list(ipl.sources or []) and "cricsheet:t20s_male" in t20.sources
    with pytest.raises(FileNotFoundError, match=r"no data config 'nope' in .*\(have: .*ipl.*t20"):
        load_data_config("nope")
    assert project_path("data") == CONF_DIR.parent / "data" and project_path("/x") == Path("/x")


def test_the_recipe_names_every_setting_make_main_and_make_leagues_use():
    """docs/recipe.md is the one page a newcomer learns the model from (issue 54): every key of the composed
    training config (conf/config.yaml with its groups, t20's data and the weight average), of conf/baselines.yaml,
    and every setting the
    Makefile's leagues stages add, is named there in backticks: by its whole key, the end of its path (its own
    name in a row of its group, `models.marginal`), or a group written as `paths.*`."""
    import re

    from tests.test_settings import composed, leaves

    ticked = re.findall(r"`([^`]+)`", (Path(__file__).parents[1] / "docs" / "recipe.md").read_text())
    named = {word for text in ticked for word in re.split(r"[\s,=:()\[\]]+", text) if word}
    groups = {word.removesuffix(".*") for word in named if word.endswith(".*")}  # `paths.*`: every key under it
    keys = []
    for name, overrides in (("config", []), ("config", ["data=t20", "callbacks=ema"]), ("baselines", [])):
        keys += leaves(OmegaConf.to_container(composed(name, *overrides), resolve=False))
    makefile = (Path(__file__).parents[1] / "Makefile").read_text()
    leagues = makefile.split("\nleagues:", 1)[1].split("\n\n", 1)[0]
    settings = [token.split("=", 1)[0].strip("'") for token in leagues.split() if "=" in token]
    stages = [key for key in settings if "$" not in key and key not in ("hydra.run.dir", "resume")]
    assert {"refit_from", "refit_epochs", "init_from", "data.train_competitions"} <= set(stages)  # the Makefile read
    keys += stages

    def named_in_recipe(key: str) -> bool:  # its name or the end of its path (`models.marginal`), or `group.*`
        parts = key.split(".")
        ends = {".".join(parts[i:]) for i in range(len(parts))}
        return bool(ends & named) or any(".".join(parts[:i]) in groups for i in range(1, len(parts)))

    missing = sorted({key for key in keys if not named_in_recipe(key)})
    assert not missing, f"docs/recipe.md does not name: {missing}"
