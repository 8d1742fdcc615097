"""`cricket-attn-baselines`: the baselines on the transformer's split, protocol and metrics.

Each baseline is fitted, as the final transformer is, on the training and validation seasons (`refit=true`;
the training seasons alone with `refit=false`) and scored on the test seasons. The gradient-boosted trees are
the refit's teacher itself (cricket_attn.data.teacher: LightGBM's trees in folds by match, fitted through the
validation season), its folds' mean scoring the test: no trees are fitted twice, and none has seen a test
ball. Each is an MLflow run in the transformer's experiment, with its log-loss difference from a transformer
run, paired on the same deliveries, with a bootstrap interval resampled by match.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from mlflow.exceptions import MlflowException
from omegaconf import DictConfig, OmegaConf
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cricket_attn import dashboard, progress, tracking
from cricket_attn.atomic import atomic_path
from cricket_attn.config import project_path
from cricket_attn.data.deliveries import PhaseRules, load_tables
from cricket_attn.data.features import STATE_COLUMNS, TabularFeatures
from cricket_attn.data.records import RecordBook, RecordSettings, tabular_features
from cricket_attn.data.sources import configured_sources
from cricket_attn.data.splits import SeasonSplit, season_range
from cricket_attn.data.teacher import cached_teacher
from cricket_attn.data.trees import cached_trees
from cricket_attn.inference.probabilities import DELIVERY_COLUMNS
from cricket_attn.laws import N_OUTCOMES
from cricket_attn.metrics import (
    KEY_COLUMNS,
    PROB_COLUMNS,
    labels_of,
    paired_by_state,
    paired_difference,
    plot_comparison,
)
from cricket_attn.settings import BASELINES, SettingError, check

log = logging.getLogger(__name__)


class Marginal:
    """The training class mix, for every ball."""

    def fit(self, X, y):
        self.prior = np.bincount(y, minlength=N_OUTCOMES) / len(y)
        return self

    def predict_proba(self, X):
        return np.tile(self.prior, (len(X), 1))


class FrequencyTable:
    """Outcome mix per cell of phase x wickets down x ball in over, shrunk towards the class mix."""

    COLUMNS = ("phase", "wickets_before", "ball_in_over")

    def __init__(self, strength: float):
        self.strength = strength

    def _cells(self, X: pd.DataFrame) -> pd.Series:
        """Each ball's cell as one text key, `middle|3|4` (joined column by column, not row by row)."""
        text = [X[c].astype(str) for c in self.COLUMNS]
        return text[0].str.cat(text[1:], sep="|")

    def fit(self, X: pd.DataFrame, y: np.ndarray):
        self.prior = np.bincount(y, minlength=N_OUTCOMES) / len(y)
        counts = pd.crosstab(self._cells(X).to_numpy(), y).reindex(columns=range(N_OUTCOMES), fill_value=0)
        self.table = (counts + self.strength * self.prior).div(counts.sum(axis=1) + self.strength, axis=0)
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        found = self.table.reindex(self._cells(X).to_numpy())
        return found.fillna(pd.Series(self.prior, index=range(N_OUTCOMES))).to_numpy()


def _cells_frame(d: pd.DataFrame, X: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "phase": d["phase"].astype(str).to_numpy(),
            "wickets_before": X[:, STATE_COLUMNS.index("wickets_before")].astype(int),
            "ball_in_over": X[:, STATE_COLUMNS.index("ball_in_over")].astype(int),
        }
    )


def fit_baseline(name: str, settings: dict, X_fit, y_fit) -> object:
    """A fitted model (the trees are the teacher's: `teacher_trees`)."""
    if name == "marginal":
        return Marginal().fit(X_fit, y_fit)
    if name == "frequency_table":
        return FrequencyTable(**settings).fit(X_fit, y_fit)
    if name == "logistic":
        return make_pipeline(StandardScaler(), LogisticRegression(**settings)).fit(X_fit, y_fit)
    raise ValueError(f"baselines.models: unknown baseline {name!r}")


def teacher_trees(fit_on: pd.DataFrame, X_fit: np.ndarray, book: RecordBook | None, settings: dict, data) -> object:
    """The trees baseline: the teacher a transformer's refit fits on the same balls (cricket_attn.data.teacher,
    read from the cache where a run fitted it), whose folds' mean predicts balls none of them has seen. On rates
    fitted per fold (data.records null) its folds cannot read new balls: one fit of the same trees instead."""
    cache = project_path(data.data_dir) / "cache"
    if book is None:
        return cached_trees(X_fit, labels_of(fit_on), settings, 0, cache)
    folds = int((data.get("teacher") or {}).get("folds", 2))
    return cached_teacher(fit_on, settings, folds, 0, float(data.rate_strength), cache, book)


def _inputs(name: str, d: pd.DataFrame, X: np.ndarray):
    return _cells_frame(d, X) if name == "frequency_table" else X


def run_baselines(cfg: DictConfig) -> pd.DataFrame:
    """Fit, score and log every configured baseline; returns the comparison table. Each baseline is an
    MLflow run tagged, like the transformer run it is paired with, `comparison=<that run's name>`; the
    transformer run gets the comparison as its description."""
    check(cfg, BASELINES)  # before anything is read, fitted or logged
    data = cfg.data
    try:  # their messages start with the setting's name within data: `split: ...`, `phases: ...`
        phases = PhaseRules.from_config(OmegaConf.to_container(data.phases, resolve=True))
        split = SeasonSplit.from_config(OmegaConf.to_container(data.split, resolve=True))
    except ValueError as err:
        raise SettingError(f"data.{err}") from None
    uri, experiment = cfg.logger.tracking_uri, cfg.logger.experiment_name
    tracking.check_tracking_uri(uri)
    against = cfg.baselines.against
    reference = find_transformer_run(uri, experiment, against) if against else None  # a wrong one fails here
    tables = load_tables(configured_sources(data.sources), phases, project_path(data.data_dir))
    reference = reference or find_transformer_run(uri, experiment, None, tables.key)
    ref_run = tracking.MlflowClient(uri).get_run(reference) if reference else None
    comparison = None
    if ref_run:  # the tag the runs of this comparison share; a run from before the tag existed gets it now
        comparison = ref_run.data.tags.get("comparison") or ref_run.info.run_name
        tracking.MlflowClient(uri).set_tag(reference, "comparison", comparison)
    log.info(
        "paired against: %s",
        f"transformer run {ref_run.info.run_name} ({reference})"
        if ref_run
        else "no transformer run in this store (the table will have no paired column)",
    )
    d = tables.deliveries
    d = d[~d["is_super_over"].astype(bool)].reset_index(drop=True)
    labels = split.label(d["season"])
    fitted = ["train", "validation"] if cfg.refit else ["train"]
    fit_final, test = d[labels.isin(fitted)].reset_index(drop=True), d[labels == "test"].reset_index(drop=True)
    X_fit, X_test, book = baseline_features(tables.deliveries, fit_final, test, data)
    y_fit = labels_of(fit_final)
    ref_scored = tracking.load_scored(uri, reference, "test") if reference else None
    state = keyed_state(test, X_test)

    overrides = HydraConfig.get().job.override_dirname if HydraConfig.initialized() else ""
    when = datetime.fromtimestamp(ref_run.info.start_time / 1000) if ref_run else None
    rows, by_state = [], {}
    models = cfg.baselines.models
    for i, (name, settings) in enumerate(models.items(), start=1):
        settings = OmegaConf.to_container(settings, resolve=True) or {}
        stage, clock = f"baseline {i}/{len(models)}: {name}", progress.Stopwatch()
        log.info(
            "%s: fitting on seasons %s%s",
            stage,
            season_range(fit_final),
            " (the refit's teacher: its folds' mean, from the cache where a run fitted them)"
            if name == "gradient_boosting"
            else "",
        )
        if name == "gradient_boosting":  # the teacher's trees (data.trees), with any setting given here
            settings = {**OmegaConf.to_container(data.trees, resolve=True), **settings}
        tags = {"model_family": "baseline", "baseline": name}
        if ref_run:
            tags.update(paired_against=reference, comparison=comparison)
        note = (
            f"Paired against the transformer run [{ref_run.info.run_name}](#/experiments/"
            f"{ref_run.info.experiment_id}/runs/{reference}) on the same test deliveries."
            if ref_run
            else None
        )
        run_id = tracking.start_run(uri, experiment, tracking.run_name(name, overrides, when), tags, description=note)
        with tracking.ending(uri, run_id):
            with tracking.system_metrics(uri, run_id, interval=5.0):
                start = time.perf_counter()
                if name == "gradient_boosting":
                    model = teacher_trees(fit_final, X_fit, book, settings, data)
                else:
                    model = fit_baseline(name, settings, _inputs(name, fit_final, X_fit), y_fit)
                probs = np.asarray(model.predict_proba(_inputs(name, test, X_test)), dtype=np.float64)
                probs /= probs.sum(
                    axis=1, keepdims=True
                )  # logistic regression on float32 features sums to 1 only to 1e-7
                seconds = time.perf_counter() - start
            scored = test[[c for c in DELIVERY_COLUMNS if c in test.columns]].copy()
            for j, col in enumerate(PROB_COLUMNS):
                scored[col] = probs[:, j]
            client = tracking.MlflowClient(uri)
            params = {
                "baseline": name,
                "refit": str(cfg.refit),
                "fit_seasons": season_range(fit_final),
                **{f"settings.{k}": str(v) for k, v in settings.items()},
            }
            params.update(tracking.flatten({"data": OmegaConf.to_container(data, resolve=True)}))
            tracking.log_params(uri, run_id, params)
            tracking.log_datasets(
                uri,
                run_id,
                {"train": (season_range(fit_final), fit_final), "test": (season_range(test), test)},
                ", ".join(tables.sources),
                tables.key,
            )
            metrics = tracking.log_scored(uri, run_id, scored, "test", name)
            client.log_metric(run_id, "fit_seconds", seconds)
            row = {"model": name, **{k: metrics[k] for k in ("log_loss", "brier", "accuracy", "ece")}, "run_id": run_id}
            if ref_scored is not None:
                paired = paired_difference(scored, ref_scored, cfg.baselines.n_boot, cfg.seed)
                for k in ("diff", "ci_low", "ci_high"):
                    client.log_metric(run_id, f"paired/{k}_vs_transformer", paired[k])
                row.update({f"{k}_vs_transformer": paired[k] for k in ("diff", "ci_low", "ci_high")})
                by_state[name] = paired_by_state(scored, ref_scored, state, seed=cfg.seed)
                client.log_text(run_id, by_state_table({name: by_state[name]}), "paired_by_state.md")
        rows.append(row)
        paired_text = (
            f", {row['diff_vs_transformer']:+.4f} [{row['ci_low_vs_transformer']:+.4f}, "
            f"{row['ci_high_vs_transformer']:+.4f}] against the transformer"
            if ref_scored is not None
            else ""
        )
        log.info(
            "%s: test log loss %.4f%s; fitted in %.0f s, done in %s",
            stage,
            row["log_loss"],
            paired_text,
            seconds,
            clock,
        )
    table = comparison_table(uri, reference, rows)
    out = Path(cfg.paths.output_dir)
    with atomic_path(out / "comparison.md") as tmp:
        tmp.write_text(table)
    print(f"written: {out / 'comparison.md'}")
    if by_state:
        with atomic_path(out / "paired_by_state.md") as tmp:
            tmp.write_text(by_state_table(by_state))
        print(f"written: {out / 'paired_by_state.md'} (where each baseline and the transformer part company)")
    if ref_run:
        log_comparison(uri, reference, table, pd.DataFrame(rows), out)
        dashboard.save_comparison_view(uri, experiment, comparison)
    print(f"\nTest seasons {season_range(test)}, {len(test):,} deliveries; log loss in nats per ball:\n\n{table}")
    print(f"MLflow, after `make dashboard`: {dashboard.dashboard_url(uri, experiment, comparison=bool(ref_run))}")
    return pd.DataFrame(rows)


def log_comparison(uri: str, reference: str, table: str, rows: pd.DataFrame, folder: Path) -> None:
    """On the transformer run: the comparison table as its description, and the table, the by-state
    table and a chart of the paired differences as artifacts under `comparison/`."""
    client = tracking.MlflowClient(uri)
    client.set_tag(
        reference,
        tracking.MLFLOW_RUN_NOTE,
        "Paired against the baselines (the runs with its `comparison` tag) on the same test deliveries:\n\n" + table,
    )
    paired = rows.set_index("model")[["diff_vs_transformer", "ci_low_vs_transformer", "ci_high_vs_transformer"]]
    paired.columns = ["diff", "ci_low", "ci_high"]
    plot_comparison(paired, folder / "comparison.png")
    for name in ("comparison.md", "paired_by_state.md", "comparison.png"):
        if (folder / name).is_file():
            client.log_artifact(reference, str(folder / name), "comparison")


def baseline_features(
    known: pd.DataFrame, fit_on: pd.DataFrame, test: pd.DataFrame, data
) -> tuple[np.ndarray, np.ndarray, RecordBook | None]:
    """The features of the fitting and test deliveries, as the teacher's trees read them, and the record book
    they were read from: the match state, the over and the players' and venue's outcome rates fitted on the
    fitting seasons (out of fold for their own rows, no book); with `data.records`, every key's record as of
    the ball's day from the `known` matches before it, in place of the rates."""
    last = int(fit_on["season"].max())
    if data.get("records") is not None:
        log.info("features: match state and each player's, venue's and competition's record as of the day")
        book = RecordBook(known, RecordSettings(**data.records))
        return tabular_features(fit_on, book, last), tabular_features(test, book, last), book
    log.info("features: match state and outcome rates, fitted on seasons %s", season_range(fit_on))
    features, X_fit = TabularFeatures.fit_transform(fit_on, float(data.rate_strength))
    return X_fit, features.transform(test), None


def keyed_state(d: pd.DataFrame, X: np.ndarray) -> pd.DataFrame:
    """The match state of deliveries `d` (from their feature matrix `X`, whose first columns it is), keyed,
    for `paired_by_state`."""
    state = pd.DataFrame(X[:, : len(STATE_COLUMNS)], columns=list(STATE_COLUMNS), index=d.index)
    for key in (*KEY_COLUMNS, "phase"):
        state[key] = d[key]  # phase stays categorical, so its bins come in match order
    state["innings_kind"] = np.where(state["is_chase"] > 0, "chase", "first innings")
    return state


def by_state_table(by_state: dict[str, pd.DataFrame]) -> str:
    """Markdown: per bin of the match state, each baseline's log loss minus the transformer's on those
    balls, with its 95% interval by match (positive: the transformer is better there)."""
    names = list(by_state)
    first = by_state[names[0]]
    lines = [
        "| state | bin | deliveries | " + " | ".join(f"{n} - transformer [95% CI]" for n in names) + " |",
        "|---|---|---:|" + "---|" * len(names),
    ]
    for i, row in first.iterrows():
        cells = [
            f"{t.loc[i, 'diff']:+.4f} [{t.loc[i, 'ci_low']:+.4f}, {t.loc[i, 'ci_high']:+.4f}]"
            for t in by_state.values()
        ]
        lines.append(f"| {row['state']} | {row['bin']} | {int(row['deliveries']):,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def find_transformer_run(uri: str, experiment: str, against: str | None, data_key: str | None = None) -> str | None:
    """The transformer run to pair against: `against` (a run id, refused in one line unless the store has
    it with a test report), else the one that finished last among those trained on the data whose tables'
    key is `data_key` (any data if None): another run finishing beside it on other data is not taken."""
    if against:
        try:
            found = tracking.MlflowClient(uri).get_run(against)
        except MlflowException:
            found = None
        if found is None or "test/log_loss" not in found.data.metrics:
            raise SettingError(
                f"baselines.against={against!r}: must be the id of a run with a test report in {uri}"
                + ("" if found else " (no such run)")
            )
        return against
    run = tracking.latest_transformer_run(uri, experiment, data_key)
    return run.info.run_id if run else None


def comparison_table(uri: str, reference: str | None, rows: list[dict]) -> str:
    """Markdown: each model's test metrics and its paired log-loss difference from the transformer."""
    lines = [
        "| model | log loss | Brier | accuracy | ECE | log loss - transformer [95% CI, by match] |",
        "|---|---|---|---|---|---|",
    ]
    if reference:
        m = tracking.MlflowClient(uri).get_run(reference).data.metrics
        lines.append(
            f"| transformer (run {reference[:8]}) | {m['test/log_loss']:.4f} | {m['test/brier']:.4f} | "
            f"{m['test/accuracy']:.4f} | {m['test/ece']:.4f} | 0 (reference) |"
        )
    for r in rows:
        paired = (
            f"{r['diff_vs_transformer']:+.4f} [{r['ci_low_vs_transformer']:+.4f}, {r['ci_high_vs_transformer']:+.4f}]"
            if "diff_vs_transformer" in r
            else "no transformer run to pair with"
        )
        lines.append(
            f"| {r['model']} | {r['log_loss']:.4f} | {r['brier']:.4f} | {r['accuracy']:.4f} | "
            f"{r['ece']:.4f} | {paired} |"
        )
    return "\n".join(lines) + "\n"
