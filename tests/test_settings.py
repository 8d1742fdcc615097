"""The commands' settings tables: every shipped config passes its table, and a mistaken setting is one
line naming the key, the value and what is allowed."""

from __future__ import annotations

import argparse
import re

import pytest
from hydra import compose, initialize_config_dir

from cricket_attn import settings
from cricket_attn.config import CONF_DIR
from cricket_attn.settings import SettingError, check

TABLES = {"config": settings.TRAIN, "baselines": settings.BASELINES, "ablation": settings.ABLATION}


def composed(name: str, *overrides: str):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name=name, overrides=["paths.output_dir=/tmp/unused", *overrides])


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("config", []),
        *(("config", [f"debug={d}"]) for d in ("fast", "fast_dev_run", "overfit")),
        *(("config", [f"trainer={t}"]) for t in ("gpu", "ddp")),
        ("config", ["experiment=equal_seasons"]),
        ("config", ["data=t20", "data.train_competitions=[Indian Premier League, SA20]", "init_from=outputs/x"]),
        ("config", ["+logger.tags.ablation=attention", "+trainer.limit_train_batches=0.5", "data.teacher=null"]),
        ("config", ["~logger", "callbacks=[ema,early_stopping]", "model.context=0"]),
        ("config", ["callbacks=early_stopping"]),
        ("baselines", []),
        ("ablation", []),
        ("ablation", ["ablation_set=context"]),
    ],
)
def test_every_shipped_config_passes_its_table(name, overrides):
    check(composed(name, *overrides), TABLES[name])


# Keys of the shipped configs that no table names, on purpose: where things go (paths, checked where they are
# written), what Hydra builds (`_target_`), the model's (ModelConfig checks its own, and refuses a key it does
# not have) and three Lightning settings the code sets or a preset chooses.
LEFT_TO_READERS = ("paths.", "model.", "trainer.accelerator", "trainer.enable_progress_bar", "trainer.default_root_dir")


def leaves(node, prefix: str = "") -> list[str]:
    out = []
    for key, value in node.items():
        out += leaves(value, f"{prefix}{key}.") if isinstance(value, dict) and value else [f"{prefix}{key}"]
    return out


@pytest.mark.parametrize(
    "name, overrides",
    [
        ("config", []),
        ("config", ["data=t20", "callbacks=ema"]),
        *(("config", [f"trainer={t}"]) for t in ("gpu", "ddp")),
        ("config", ["debug=fast"]),
        ("baselines", []),
        ("ablation", []),
        ("ablation", ["ablation_set=context"]),
    ],
)
def test_every_key_of_a_shipped_config_has_its_rule(name, overrides):
    """conf/ and the tables cannot drift apart silently: a key added to conf/ gets its type and range here. (A key
    under a mapping the table checks as a whole, such as a callback's settings, counts as that mapping's.)"""
    from omegaconf import OmegaConf

    named = {setting[0] for setting in TABLES[name]}
    keys = leaves(OmegaConf.to_container(composed(name, *overrides), resolve=False))
    unruled = [
        k
        for k in keys
        if k not in named
        and not any(k.startswith(n + ".") for n in named)
        and not k.startswith(LEFT_TO_READERS)
        and not k.endswith("._target_")
    ]
    assert unruled == [], f"keys of conf/ with no rule in cricket_attn.settings: {unruled}"


@pytest.mark.parametrize(
    "name, override, message",
    [
        ("config", "trainer.max_epochs=abc", "trainer.max_epochs='abc': must be an integer"),
        ("config", "trainer.max_epochs=2.5", "trainer.max_epochs=2.5: must be an integer"),
        ("config", "trainer.max_epochs=-3", "trainer.max_epochs=-3: must be at least 1"),
        ("config", "data.batch_size=0", "data.batch_size=0: must be at least 1"),
        ("config", "optim.lr=fast", "optim.lr='fast': must be a number"),
        ("config", "optim.lr=true", "optim.lr=True: must be a number"),
        ("config", "optim.lr=nan", "optim.lr=nan: must be positive"),
        ("config", "refit=yes", "refit='yes': must be true or false"),
        ("config", "seed=-1", "seed=-1: must be in [0, 4294967295]"),
        ("config", "data.season_half_life=0", "data.season_half_life=0: must be positive"),
        ("config", "data.split.validation=2024", "data.split.validation=2024: must be a list"),
        ("config", "data.sources=matches.zip", "data.sources='matches.zip': must be a list, or null"),
        ("config", "data.train_competitions=[]", "data.train_competitions=[]: must be a list of competitions"),
        ("config", "data.teacher.folds=1", "data.teacher.folds=1: must be at least 2"),
        ("config", "data.records=365", "data.records=365: must be a mapping, or null"),
        ("config", "data.records={rate_strength: 0}", "data.records.rate_strength=0: must be positive"),
        ("config", "data.trees.learning_rate=0", "data.trees.learning_rate=0: must be positive"),
        ("config", "callbacks.model_checkpoint=null", "callbacks.model_checkpoint=null: must be a mapping"),
        ("config", "callbacks.model_checkpoint.mode=low", "callbacks.model_checkpoint.mode='low': must be one of"),
        ("config", "+trainer.limit_val_batches=1.5", "trainer.limit_val_batches=1.5: must be a share in [0.0, 1.0]"),
        ("config", "optim.lr=${nowhere}", "optim.lr: cannot be read: Interpolation key 'nowhere' not found"),
        ("baselines", "baselines.n_boot=0", "baselines.n_boot=0: must be at least 1"),
        ("baselines", "baselines.models.logistic.C=-1", "baselines.models.logistic.C=-1: must be positive"),
        (
            "baselines",
            "+baselines.models.xgboost={}",
            "baselines.models={marginal, frequency_table, logistic, gradient_boosting, xgboost}: must be among",
        ),
        ("ablation", "jobs=0", "jobs=0: must be at least 1"),
        ("ablation", "seeds=[0,-1]", "seeds=[0, -1]: must be a list of seeds"),
        ("ablation", "~variants.default", "variants={self_only, last_6,"),
    ],
)
def test_a_mistaken_setting_is_one_line_naming_key_value_and_what_is_allowed(name, override, message):
    with pytest.raises(SettingError) as refused:
        check(composed(name, override), TABLES[name])
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


def test_a_records_setting_that_is_not_one_is_named():
    """Over conf/data/ipl.yaml's records Hydra itself refuses a key it lacks; over a null (records off) the
    mapping is taken whole, and the check names what it may hold."""
    with pytest.raises(SettingError, match=r"^data.records=\{half_life\}: must be a mapping of competition_strength"):
        check(composed("config", "data.records=null", "data.records={half_life: 365}"), settings.TRAIN)


def test_a_key_the_config_does_not_have_is_skipped_and_a_null_parent_skips_its_keys():
    check(composed("config", "data.teacher=null", "~trainer.gradient_clip_val"), settings.TRAIN)
    with pytest.raises(SettingError, match=r"^data.teacher.weight=2: must be in \[0, 1\]$"):
        check(composed("config", "data.teacher.weight=2"), settings.TRAIN)


@pytest.mark.parametrize(
    "minimum, allowed, text, result",
    [
        (1, None, "3", 3),
        (0, None, "0", 0),
        (1, None, "0", "0: must be at least 1"),
        (1, None, "-1", "-1: must be at least 1"),
        (0, "0 (skip the check) or more", "-2", "-2: must be 0 (skip the check) or more"),
        (1, None, "many", "many: must be an integer"),
    ],
)
def test_count_is_an_argparse_type_refusing_by_value(minimum, allowed, text, result):
    parse = settings.count(minimum, allowed)
    if isinstance(result, int):
        assert parse(text) == result
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=f"^{re.escape(result)}$"):
            parse(text)


# Presets and compositions that bring the keys a table names beyond the default config's.
SHIPPED = {
    "config": [[], ["data=t20", "callbacks=ema"], ["callbacks=early_stopping"], ["trainer=gpu"], ["trainer=ddp"],
               ["debug=fast"], ["debug=fast_dev_run"], ["debug=overfit"], ["experiment=equal_seasons"],
               ["hparams_search=optuna"]],
    "baselines": [[]],
    "ablation": [[], ["ablation_set=context"]],
}  # fmt: skip
# Keys the tables check that no shipped config sets: each is given with `+` on the command line (a competition's
# own half-life, a setting of the trees baseline's own over data.trees, four Lightning settings).
OPTIONAL = ("data.records.competition_half_life_days", "baselines.models.gradient_boosting.", "trainer.min_epochs",
            "trainer.limit_test_batches", "trainer.accumulate_grad_batches", "trainer.log_every_n_steps")  # fmt: skip


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_rule_names_a_key_some_shipped_config_has(name):
    """The other way round: a rule of a key no shipped config (or preset) sets any more is a setting the code no
    longer reads, and goes with it; keys added with `+` on the command line are named in OPTIONAL."""
    from omegaconf import OmegaConf

    keys = set()
    for overrides in SHIPPED[name]:
        keys.update(leaves(OmegaConf.to_container(composed(name, *overrides), resolve=False)))
    stale = [
        setting[0]
        for setting in TABLES[name]
        if setting[0] not in keys
        and not any(k.startswith(setting[0] + ".") for k in keys)
        and not setting[0].startswith(OPTIONAL)
    ]
    assert stale == []
