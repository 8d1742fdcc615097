"""The commands' settings, each key's type and allowed values in one table per command, checked before any work.

A mistaken setting fails in seconds with one line naming the key, the value and what is allowed, before any
data is read or MLflow run is opened: `data.batch_size=0: must be at least 1`, the form the model's own
settings use (cricket_attn.model.ModelConfig, which checks `model.*` itself: its rules are not repeated
here). The split's order and the phases are checked where they are read (SeasonSplit, PhaseRules); here only
their types.

Why a table over the composed config rather than Hydra's structured configs (dataclasses in a ConfigStore):
those check types as the overrides are merged, in Hydra's several-line error, and say nothing of ranges;
a table of (key, type, rule, allowed) reads as the list of settings it is, checks the config as composed
(presets, experiments and `+` overrides included) and words every refusal alike. A key the table does not
name is left to Hydra (which refuses an unknown key without `+`) and to the code that reads it; a key a
config does not have (a preset's trainer setting, a callback set to null) is skipped.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from cricket_attn.progress import MODES


class SettingError(ValueError):
    """A setting of the wrong type or outside what is allowed; the message names the key and the value."""


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# The types a setting can have, and how a refusal words them.
KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "int": (_integer, "an integer"),
    "number": (_number, "a number"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "list": (lambda v: isinstance(v, Sequence) and not isinstance(v, str), "a list"),  # a ListConfig too
    "map": (lambda v: isinstance(v, Mapping), "a mapping"),  # a DictConfig too
    "any": (lambda v: True, ""),
}

Rule = tuple[Callable[[Any], bool], str]  # holds, what is allowed
ANY: Rule = (lambda v: True, "")
# A setting: (key, kind, holds, what is allowed); a kind ending in `?` may also be null.
Setting = tuple[str, str, Callable[[Any], bool], str]


def at_least(n: float) -> Rule:
    return (lambda v: v >= n, f"at least {n}")


def between(low: float, high: float) -> Rule:
    return (lambda v: low <= v <= high, f"in [{low}, {high}]")


def one_of(*choices: str) -> Rule:
    return (lambda v: v in choices, f"one of {', '.join(choices)}")


def list_of(kind: str, what: str, allow_empty: bool = True) -> Rule:
    ok = KINDS[kind][0]
    return (lambda v: (allow_empty or len(v) > 0) and all(ok(x) for x in v), what)


POSITIVE: Rule = (lambda v: v > 0, "positive")
SEED: Rule = (lambda v: 0 <= v < 2**32, "in [0, 4294967295]")  # what numpy and Lightning seed with
SEEDS: Rule = (
    lambda v: len(v) > 0 and all(_integer(s) and SEED[0](s) for s in v),
    "a list of seeds in [0, 4294967295]",
)
# Lightning's batch limits: a share of the batches (a float in [0, 1]) or a number of them (an integer).
BATCHES: Rule = (
    lambda v: (_integer(v) and v >= 0) or (isinstance(v, float) and 0 <= v <= 1),
    "a share in [0.0, 1.0] or a number of batches (0 or more)",
)
DEVICES: Rule = (lambda v: not _integer(v) or v >= 1 or v == -1, "at least 1, -1 (all), auto or a list of ids")
FAST_DEV_RUN: Rule = (lambda v: isinstance(v, bool) or _integer(v) and v >= 0, "true, false or a number of batches")

# LightGBM's trees (cricket_attn.data.trees): the teacher's and the trees baseline's settings, in LightGBM's
# own names (any other of its parameters may be added: LightGBM checks those), and the share they stop on.
TREES: tuple[Setting, ...] = (
    ("learning_rate", "number", *POSITIVE),
    ("num_iterations", "int", *at_least(1)),
    ("num_leaves", "int", *at_least(2)),
    ("feature_fraction", "number", lambda v: 0 < v <= 1, "in (0, 1]"),
    ("min_data_in_leaf", "int", *at_least(1)),
    ("lambda_l2", "number", *at_least(0)),
    ("early_stopping_round", "int", *at_least(1)),
    ("stopping_fraction", "number", lambda v: 0 < v < 1, "in (0, 1)"),
)


def under(prefix: str, settings: Iterable[Setting]) -> tuple[Setting, ...]:
    return tuple((f"{prefix}.{key}", *rest) for key, *rest in settings)


# Records as of the day (cricket_attn.data.records.RecordSettings): shrinkages in balls, a half-life in days.
RECORDS = ("competition_strength", "rate_strength", "half_life_days", "competition_half_life_days")

# conf/data (the training data, shared by cricket-attn-train and cricket-attn-baselines).
DATA: tuple[Setting, ...] = (
    (
        "data.sources",
        "list?",
        *list_of(
            "str", "a list of Cricsheet zips, folders, match files, embedded, cricsheet:<name> or addresses, or null"
        ),
    ),
    ("data.data_dir", "str", *ANY),
    ("data.split", "map", *ANY),
    ("data.split.train_until", "int", *ANY),
    ("data.split.validation", "list", *list_of("int", "a list of seasons", allow_empty=False)),
    ("data.split.test", "list", *list_of("int", "a list of seasons", allow_empty=False)),
    ("data.phases", "map", *ANY),
    ("data.min_count", "int?", *at_least(1)),
    ("data.competition_min_count", "int", *at_least(1)),
    ("data.train_competitions", "list?", *list_of("str", "a list of competitions", allow_empty=False)),
    ("data.rate_strength", "number", *at_least(0)),
    ("data.season_half_life", "number?", *POSITIVE),
    ("data.batch_size", "int", *at_least(1)),
    ("data.eval_batch_size", "int", *at_least(1)),
    ("data.num_workers", "int", *at_least(0)),
    ("data.refit", "bool", *ANY),
    ("data.seed", "int", *SEED),
    ("data.history_balls", "int", *at_least(0)),
    ("data.first_innings", "bool", *ANY),
    ("data.records", "map?", lambda v: set(v) <= set(RECORDS), f"a mapping of {', '.join(RECORDS)}, or null"),
    *under("data.records", tuple((key, "number", *POSITIVE) for key in RECORDS[:3])),
    ("data.records.competition_half_life_days", "number?", *POSITIVE),
    ("data.teacher", "map?", *ANY),
    ("data.teacher.weight", "number", *between(0, 1)),
    ("data.teacher.folds", "int", *at_least(2)),
    ("data.trees", "map", *ANY),
    *under("data.trees", TREES),
)

LOGGER: tuple[Setting, ...] = (
    ("logger", "map?", *ANY),
    ("logger.experiment_name", "str", *ANY),
    ("logger.tracking_uri", "str", *ANY),
    ("logger.run_name", "str?", *ANY),
    ("logger.tags", "map?", *ANY),
)

# cricket-attn-train: conf/config.yaml as composed (model.* is ModelConfig's).
TRAIN: tuple[Setting, ...] = (
    ("seed", "int", *SEED),
    ("refit", "bool", *ANY),
    ("calibrate", "bool", *ANY),
    ("calibrate_wickets", "bool", *ANY),
    ("ensemble", "int", *at_least(1)),
    ("refit_from", "str", *one_of("scratch", "selected")),
    ("refit_epochs", "int", *at_least(1)),
    ("progress", "str", *one_of(*MODES)),
    ("compile", "bool", *ANY),
    ("resume", "str?", *ANY),
    ("init_from", "str?", *ANY),
    ("mlflow.log_model", "bool", *ANY),
    ("mlflow.registered_model_name", "str?", *ANY),
    ("optim.lr", "number", *POSITIVE),
    ("optim.weight_decay", "number", *at_least(0)),
    ("optim.warmup_steps", "int", *at_least(0)),
    ("optim.min_lr_ratio", "number", *between(0, 1)),
    ("model", "map", *ANY),
    *DATA,
    ("trainer.max_epochs", "int", *at_least(1)),
    ("trainer.min_epochs", "int?", *at_least(0)),
    ("trainer.devices", "any", *DEVICES),
    ("trainer.gradient_clip_val", "number?", *at_least(0)),
    ("trainer.deterministic", "any", lambda v: isinstance(v, bool) or v == "warn", "true, false or warn"),
    ("trainer.fast_dev_run", "any", *FAST_DEV_RUN),
    *((f"trainer.{k}", "number?", *BATCHES) for k in ("limit_train_batches", "limit_val_batches")),
    *((f"trainer.{k}", "number?", *BATCHES) for k in ("limit_test_batches", "overfit_batches")),
    ("trainer.check_val_every_n_epoch", "int?", *at_least(1)),
    ("trainer.accumulate_grad_batches", "int", *at_least(1)),
    ("trainer.log_every_n_steps", "int?", *at_least(1)),
    # conf/trainer/gpu.yaml and ddp.yaml: Lightning's precision names and the strategies this project runs.
    ("trainer.precision", "any", *one_of("32-true", "32", "16-mixed", "bf16-mixed", "bf16-true", "64-true")),
    ("trainer.strategy", "str", *one_of("auto", "ddp", "ddp_spawn", "ddp_find_unused_parameters_true")),
    ("trainer.use_distributed_sampler", "bool", *ANY),
    ("trainer.sync_batchnorm", "bool", *ANY),
    ("callbacks", "map", *ANY),
    ("callbacks.early_stopping", "map?", *ANY),
    ("callbacks.early_stopping.monitor", "str", *ANY),
    ("callbacks.early_stopping.mode", "str", *one_of("min", "max")),
    ("callbacks.early_stopping.patience", "int", *at_least(0)),
    ("callbacks.model_checkpoint", "map", *ANY),  # the protocol keeps the selected epoch: it cannot be null
    ("callbacks.model_checkpoint.monitor", "str?", *ANY),
    ("callbacks.model_checkpoint.mode", "str", *one_of("min", "max")),
    ("callbacks.model_checkpoint.save_last", "bool", *ANY),
    ("callbacks.weight_averaging", "map?", *ANY),
    ("callbacks.weight_averaging.half_life_epochs", "number", *POSITIVE),
    *LOGGER,
)

# cricket-attn-baselines: conf/baselines.yaml.
BASELINE_MODELS = ("marginal", "frequency_table", "logistic", "gradient_boosting")
BASELINES: tuple[Setting, ...] = (
    ("seed", "int", *SEED),
    ("refit", "bool", *ANY),
    ("baselines.against", "str?", *ANY),  # and a run in the store: cricket_attn.training.baselines
    ("baselines.n_boot", "int", *at_least(1)),
    ("baselines.models", "map", lambda v: v and set(v) <= set(BASELINE_MODELS), f"among {', '.join(BASELINE_MODELS)}"),
    ("baselines.models.frequency_table.strength", "number", *at_least(0)),
    ("baselines.models.logistic.C", "number", *POSITIVE),
    ("baselines.models.logistic.max_iter", "int", *at_least(1)),
    *under("baselines.models.gradient_boosting", TREES),
    *DATA,
    *LOGGER,
)


def named_overrides(required: str | None = None) -> Rule:
    """Names, each with a list of overrides (the ablation's protocols and variants); `required` among them."""
    lists = KINDS["list"][0]
    what = "names, each with a list of overrides" + (f", `{required}` among them" if required else "")
    return (lambda v: len(v) > 0 and (required is None or required in v) and all(lists(o) for o in v.values()), what)


# cricket-attn-ablate: conf/ablation.yaml with its ablation set.
OVERRIDES = list_of("str", "a list of overrides")
ABLATION: tuple[Setting, ...] = (
    ("name", "str", *ANY),
    ("experiment", "str", *ANY),
    ("seeds", "list", *SEEDS),
    ("jobs", "int", *at_least(1)),
    ("n_boot", "int", *at_least(1)),
    ("only", "list?", *list_of("str", "a list of variant names, or null")),
    ("report_only", "bool", *ANY),
    ("common", "list", *OVERRIDES),
    ("extra", "list", *OVERRIDES),
    ("protocols", "map", *named_overrides()),
    ("variants", "map", *named_overrides("default")),  # the reference every other variant is paired with
    ("against", "map?", *ANY),
    ("control", "str?", *ANY),
    ("output_dir", "str", *ANY),
    ("record_dir", "str", *ANY),
    ("paths.mlflow_uri", "str", *ANY),
)

_ABSENT = object()


def shown(value: Any) -> str:
    """A value as a refusal shows it: null for None, strings quoted, a mapping by its names."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(map(str, value)) + "}"
    return "null" if value is None else repr(value)


def check(cfg: DictConfig, settings: Sequence[Setting]) -> None:
    """Raise SettingError for the first setting of `cfg` that is of the wrong type or breaks its rule."""
    for key, kind, holds, allowed in settings:
        try:
            value = OmegaConf.select(cfg, key, default=_ABSENT)
        except OmegaConfBaseException as err:  # an interpolation that cannot be resolved
            raise SettingError(f"{key}: cannot be read: {str(err).splitlines()[0]}") from None
        if value is _ABSENT:
            continue
        nullable, base = kind.endswith("?"), kind.rstrip("?")
        if value is None:
            if not nullable:
                raise SettingError(f"{key}=null: must be {KINDS[base][1]}")
            continue
        is_kind, words = KINDS[base]
        if not is_kind(value):
            raise SettingError(f"{key}={shown(value)}: must be {words}{', or null' if nullable else ''}")
        if not holds(value):
            raise SettingError(f"{key}={shown(value)}: must be {allowed}")


def count(minimum: int, allowed: str | None = None) -> Callable[[str], int]:
    """An argparse type: an integer, at least `minimum`; a refusal names the value and what is allowed
    (`argument --matches: -1: must be at least 1`)."""
    allowed = allowed or at_least(minimum)[1]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text}: must be an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text}: must be {allowed}")
        return value

    return parse
