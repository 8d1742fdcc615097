"""cricket-attn-baselines on real matches: each baseline an MLflow run beside the transformer's,
scored on the same deliveries with the same metrics, paired against it by match."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from cricket_attn.data.features import STATE_COLUMNS, TabularFeatures
from cricket_attn.metrics import PROB_COLUMNS, paired_by_state, paired_difference, per_ball_log_loss
from cricket_attn.tracking import load_scored
from cricket_attn.training.baselines import FrequencyTable, keyed_state


def test_every_baseline_is_a_run_paired_with_the_transformer(baselines_run, tracked_run):
    table = baselines_run["table"]
    assert list(table["model"]) == ["marginal", "frequency_table", "logistic", "gradient_boosting"]
    client = MlflowClient(tracked_run["uri"])
    transformer = load_scored(tracked_run["uri"], tracked_run["run_id"])
    for _, row in table.iterrows():
        run = client.get_run(row["run_id"])
        assert run.info.status == "FINISHED" and run.info.experiment_id == "1"  # the transformer's experiment
        assert run.data.tags["paired_against"] == tracked_run["run_id"]
        scored = load_scored(tracked_run["uri"], row["run_id"])
        # The same test deliveries as the transformer, in the same order.
        assert (
            scored[["match_id", "innings", "delivery_index"]].to_numpy()
            == transformer[["match_id", "innings", "delivery_index"]].to_numpy()
        ).all()
        diff = per_ball_log_loss(scored).mean() - per_ball_log_loss(transformer).mean()
        assert run.data.metrics["paired/diff_vs_transformer"] == pytest.approx(diff)
        assert (
            run.data.metrics["paired/ci_low_vs_transformer"]
            <= diff
            <= run.data.metrics["paired/ci_high_vs_transformer"]
        )
    assert "gradient_boosting" in (baselines_run["folder"] / "comparison.md").read_text()
    where = (baselines_run["folder"] / "paired_by_state.md").read_text()
    assert "| wickets down | 8+ |" in where and "| actual outcome | wicket |" in where
    assert "gradient_boosting - transformer" in where
    hgb = table.set_index("model").loc["gradient_boosting", "run_id"]
    assert "paired_by_state.md" in {a.path for a in client.list_artifacts(hgb)}


def test_one_comparison_reads_as_one_group_in_the_dashboard(baselines_run, tracked_run):
    import base64
    import json
    import zlib

    from cricket_attn.dashboard import COMPARISON_METRICS, COMPARISON_VIEW, dashboard_url

    client = MlflowClient(tracked_run["uri"])
    transformer = client.get_run(tracked_run["run_id"])
    name = transformer.info.run_name  # "transformer default 11-22 19:05"
    # The name's time is the run's start, to the minute (the baselines take their names' time from it).
    assert name.endswith(datetime.fromtimestamp(transformer.info.start_time / 1000).strftime("%m-%d %H:%M"))
    for _, row in baselines_run["table"].iterrows():
        run = client.get_run(row["run_id"])
        # Named after the baseline and the transformer run's start, tagged with its comparison.
        assert run.info.run_name == name.replace("transformer", row["model"], 1)
        assert run.data.tags["comparison"] == name and tracked_run["run_id"] in run.data.tags["mlflow.note.content"]
        assert run.info.end_time - run.info.start_time >= 1000 * run.data.metrics["fit_seconds"]  # its work inside
        contexts = {t.value for item in run.inputs.dataset_inputs for t in item.tags}
        assert contexts == {"train", "test"}
    # The transformer run carries the comparison: its description, the tables and the chart.
    table = (baselines_run["folder"] / "comparison.md").read_text()
    assert table in transformer.data.tags["mlflow.note.content"]
    logged = {a.path for a in client.list_artifacts(tracked_run["run_id"], "comparison")}
    assert logged == {"comparison/comparison.md", "comparison/paired_by_state.md", "comparison/comparison.png"}
    # The saved view shows exactly this comparison's five runs, charted on the metrics that compare them.
    tag = client.get_experiment("1").tags[f"mlflow.sharedViewState.{COMPARISON_VIEW}"]
    view = json.loads(tag)
    state = json.loads(zlib.decompress(base64.b64decode(view["state"].removeprefix("deflate;"))))
    assert view["name"] == "transformer vs baselines"
    assert [c["metricKey"] for c in state["compareRunCharts"]] == list(COMPARISON_METRICS)
    shown = client.search_runs(["1"], state["searchFilter"])
    assert {r.info.run_id for r in shown} == {tracked_run["run_id"], *baselines_run["table"]["run_id"]}
    assert f"viewStateShareKey={COMPARISON_VIEW}&" in dashboard_url(tracked_run["uri"], "cricket_attn", comparison=True)


def test_the_trees_baseline_is_the_refits_teacher_read_from_the_cache(baselines_run, tracked_run):
    """The trees baseline is the teacher the transformer's refit fitted on 2008-2024 (data.trees, three
    folds): read from the cache, no trees fitted again, its folds' mean scoring the test."""
    run_id = baselines_run["table"].set_index("model").loc["gradient_boosting", "run_id"]
    params = MlflowClient(tracked_run["uri"]).get_run(run_id).data.params
    assert params["settings.num_iterations"] == "20" and params["settings.num_leaves"] == "15"
    assert params["fit_seasons"].endswith("2024")
    cache = tracked_run["folder"] / "data" / "cache"
    assert len(list(cache.glob("teacher-*.npz"))) == 2 and not list(cache.glob("trees-*"))  # the run's two


def test_paired_interval_resamples_whole_matches(deliveries):
    frame = deliveries[["match_id", "innings", "delivery_index", "outcome", "phase"]].reset_index(drop=True)
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(10), len(frame)), rng.dirichlet(np.ones(10), len(frame))
    left = frame.assign(**dict(zip(PROB_COLUMNS, a.T)))
    right = frame.assign(**dict(zip(PROB_COLUMNS, b.T)))
    same = paired_difference(left, left)
    assert same["diff"] == 0 and same["ci_low"] == 0 and same["ci_high"] == 0
    out = paired_difference(left, right, n_boot=500)
    assert out["matches"] == 20 and out["ci_low"] < out["diff"] < out["ci_high"]
    assert out["diff"] == pytest.approx(per_ball_log_loss(left).mean() - per_ball_log_loss(right).mean())


def test_paired_difference_by_match_state_adds_up(deliveries):
    d = deliveries[~deliveries["is_super_over"]].reset_index(drop=True)
    frame = d[["match_id", "innings", "delivery_index", "outcome", "phase"]]
    rng = np.random.default_rng(1)
    left = frame.assign(**dict(zip(PROB_COLUMNS, rng.dirichlet(np.ones(10), len(frame)).T)))
    right = frame.assign(**dict(zip(PROB_COLUMNS, rng.dirichlet(np.ones(10), len(frame)).T)))
    state = keyed_state(d, TabularFeatures.fit_transform(d, 200.0)[1])
    table = paired_by_state(left, right, state, n_boot=200)
    overall = paired_difference(left, right)["diff"]
    diff = per_ball_log_loss(left) - per_ball_log_loss(right)
    for name, cut in table.groupby("state", sort=False):
        # Every ball in exactly one bin, and the bins' means weighted by their balls give the overall mean.
        assert cut["deliveries"].sum() == len(d), name
        assert (cut["diff"] * cut["deliveries"]).sum() / len(d) == pytest.approx(overall)
        assert ((cut["ci_low"] <= cut["diff"]) & (cut["diff"] <= cut["ci_high"])).all()
    # Bins checked against the raw table: balls with 8 or more wickets down, and wicket balls.
    down = d["wicket_count"].groupby([d["match_id"], d["innings"]]).cumsum() - d["wicket_count"]
    row = table.set_index(["state", "bin"]).loc[("wickets down", "8+")]
    assert row["deliveries"] == (down >= 8).sum() and row["diff"] == pytest.approx(diff[down >= 8].mean())
    wicket = table.set_index(["state", "bin"]).loc[("actual outcome", "wicket")]
    assert wicket["diff"] == pytest.approx(diff[(d["outcome"] == "wicket").to_numpy()].mean())
    assert (paired_by_state(left, left, state, n_boot=50)["diff"] == 0).all()


def test_features_are_pre_ball_and_frequency_table_falls_back_to_the_mix(deliveries):
    d = deliveries[~deliveries["is_super_over"]].reset_index(drop=True)
    feats, X = TabularFeatures.fit_transform(d, 200.0)
    assert X.shape == (len(d), len(TabularFeatures.names()))
    changed = d.copy()
    last = changed.groupby(["match_id", "innings"]).tail(1).index
    changed.loc[last, "runs_total"] += 6  # the last ball of each innings: nothing before it moves
    n_state = len(STATE_COLUMNS)
    assert np.array_equal(feats.transform(changed)[:, :n_state], feats.transform(d)[:, :n_state])
    table = FrequencyTable(strength=50).fit(
        pd.DataFrame({"phase": ["death"], "wickets_before": [0], "ball_in_over": [1]}), np.array([4])
    )
    unseen = table.predict_proba(pd.DataFrame({"phase": ["middle"], "wickets_before": [9], "ball_in_over": [6]}))
    assert np.allclose(unseen[0], table.prior)


@pytest.mark.e2e  # fits and scores the four baselines end to end
def test_with_records_each_ball_reads_only_the_matches_before_its_own(deliveries, tmp_path):
    """data.records: the baselines read each key's record as of the ball's day, so a training match's
    outcomes reach the balls after it and no ball before it; rates fitted on the seasons reach both. End
    to end, each baseline is fitted on those features and scored."""
    from omegaconf import OmegaConf

    from cricket_attn.training.baselines import baseline_features, run_baselines

    d = deliveries[~deliveries["is_super_over"]].reset_index(drop=True)
    train = d[d["season"] <= 2023]
    latest = train.loc[train["date"] == train["date"].max(), "match_id"].iloc[0]
    changed = d.copy()
    changed.loc[changed["match_id"] == latest, "outcome"] = "wicket"  # every ball of the latest training match
    earlier = (train["date"] < train["date"].max()).to_numpy()
    for records, moves_earlier in ((None, True), ({}, False)):
        data = OmegaConf.create({"records": records, "rate_strength": 200.0})
        parts = [(x[x["season"] <= 2023], x[x["season"] >= 2025]) for x in (d, changed)]
        (a, a_test, _), (b, b_test, _) = (
            baseline_features(x, tr, te, data) for x, (tr, te) in zip((d, changed), parts, strict=True)
        )
        assert not np.array_equal(a_test, b_test)  # the test balls know the changed match either way
        assert (not np.array_equal(a[earlier], b[earlier])) == moves_earlier
    results = run_baselines(baselines_config(tmp_path, "data.records={}", "baselines.n_boot=50", "refit=false"))
    loss = results.set_index("model")["log_loss"]
    assert set(loss.index) == {"marginal", "frequency_table", "logistic", "gradient_boosting"}
    # On 20 matches the logistic regression over-fits a hundred record columns (3.7 here); the others do not.
    assert np.isfinite(loss).all() and loss.drop("logistic").between(1.0, 2.0).all()


def baselines_config(folder, *overrides: str):
    """conf/baselines.yaml on the fixture matches, with its MLflow store in `folder`."""
    from hydra import compose, initialize_config_dir

    from cricket_attn.config import CONF_DIR
    from tests.conftest import FIXTURES

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(
            config_name="baselines",
            overrides=[
                f"data.sources=[{FIXTURES}]",
                f"data.data_dir={folder / 'data'}",
                f"paths.output_dir={folder / 'bl'}",
                f"paths.mlflow_uri=sqlite:///{folder / 'mlflow.db'}",
                *overrides,
            ],
        )


def refused(cfg, capsys) -> str:
    """cricket-attn-baselines' one line on standard error, for a config it refuses with status 2."""
    from cricket_attn.commands.baselines import main

    with pytest.raises(SystemExit) as stop:
        main(cfg)
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("cricket-attn-baselines: ")
    return line.removeprefix("cricket-attn-baselines: ")


@pytest.mark.parametrize(
    "override, message",
    [
        ("baselines.n_boot=0", "baselines.n_boot=0: must be at least 1"),
        ("+baselines.models.gradient_boosting.num_iterations=-5", "models.gradient_boosting.num_iterations=-5: must"),
        ("+baselines.models.xgboost={}", "baselines.models={marginal, frequency_table, logistic, gradient_boosting, x"),
        ("data.split.validation=[2025]", "data.split: seasons must run train (<= 2023) < validation [2025] < test"),
    ],
)
def test_a_mistaken_setting_is_one_line_before_anything_is_opened_or_read(tmp_path, capsys, override, message):
    assert message in refused(baselines_config(tmp_path, override), capsys)
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "data").exists()


@pytest.mark.parametrize("known", [False, True])
def test_against_must_name_a_run_of_the_store_with_a_test_report(tmp_path, capsys, known):
    from tests.conftest import empty_store

    uri = empty_store(tmp_path)  # a copy of an empty store: MLflow makes a new one's tables in seconds
    client = MlflowClient(uri)
    # No such run, or a run of the store with no test report to pair with.
    run_id = client.create_run(client.create_experiment("other")).info.run_id if known else "f00d"
    capsys.readouterr()  # MLflow's lines as it makes the store
    line = refused(baselines_config(tmp_path, f"baselines.against={run_id}"), capsys)
    assert line == f"baselines.against='{run_id}': must be the id of a run with a test report in {uri}" + (
        "" if known else " (no such run)"
    )
    assert not (tmp_path / "data").exists()  # checked before the data is read and anything fitted
    assert not client.search_runs([e.experiment_id for e in client.search_experiments()], "tags.baseline != ''")


@pytest.mark.e2e  # trains two runs
def test_the_baselines_pair_with_the_last_run_on_their_own_data(tmp_path, phases):
    """Two real runs in one store: one on the IPL fixtures, then one on them and five other leagues'
    matches, which finishes later. The baselines on the IPL fixtures pair with the IPL run (their tables'
    key is its datasets' digest), not with whichever run finished last; without a key, the last."""
    from cricket_attn.data.deliveries import load_tables
    from cricket_attn.training.baselines import find_transformer_run
    from cricket_attn.training.train import train
    from tests.conftest import FIXTURES, tiny_train_config

    leagues = FIXTURES.parent / "cricsheet_t20"
    runs = {}
    for name, sources in (("ipl", [FIXTURES]), ("pooled", [FIXTURES, leagues])):
        listed = f"data.sources=[{','.join(map(str, sources))}]"
        cfg = tiny_train_config(tmp_path, listed, "refit=false", f"paths.output_dir={tmp_path / name}")
        runs[name] = train(cfg)["mlflow_run_id"]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ipl_key = load_tables([FIXTURES], phases, tmp_path / "data").key  # what the baselines on the IPL read
    assert ipl_key in {i.dataset.digest for i in MlflowClient(uri).get_run(runs["ipl"]).inputs.dataset_inputs}
    assert find_transformer_run(uri, "cricket_attn", None, ipl_key) == runs["ipl"]
    assert find_transformer_run(uri, "cricket_attn", None) == runs["pooled"]
