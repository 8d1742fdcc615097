"""MLflow tracking of training runs: what a run records, resuming, failures, and a real server."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from cricket_attn.data.deliveries import plain_types
from cricket_attn.metrics import PROB_COLUMNS
from cricket_attn.model import ConfigError
from cricket_attn.tracking import (
    ResumeError,
    TrackingError,
    check_tracking_uri,
    latest_transformer_run,
    read_run_file,
    start_run,
    system_metrics,
)
from cricket_attn.training.restart import resume_config, selection_done
from cricket_attn.training.train import train
from tests.conftest import FIXTURES, empty_store, tiny_train_config

pytestmark = pytest.mark.e2e  # training runs, their MLflow store, commands and a server
TRAIN = shutil.which("cricket-attn-train") or str(Path(sys.executable).with_name("cricket-attn-train"))


def test_run_records_config_metrics_plots_checkpoint_and_model(tracked_run):
    client = MlflowClient(tracked_run["uri"])
    run = client.get_run(tracked_run["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.params["model.d_model"] == "8" and run.data.params["data.min_count"] == "None"
    assert run.data.tags["model_family"] == "transformer"
    assert Path(run.data.tags["checkpoint"]).is_file()
    # Per-epoch losses of the selection stage and of the refit stage.
    epochs = tracked_run["results"]["selection/epochs"]
    assert len(client.get_metric_history(run.info.run_id, "train/loss")) == 2
    assert len(client.get_metric_history(run.info.run_id, "val/loss")) == 2
    assert len(client.get_metric_history(run.info.run_id, "refit-train/loss")) == epochs
    for key in ("log_loss", "brier", "accuracy", "ece", "log_loss_powerplay", "log_loss_middle", "log_loss_death"):
        assert run.data.metrics[f"test/{key}"] == pytest.approx(tracked_run["results"][f"test/{key}"])
    assert not [k for k in run.data.metrics if k.startswith("refit-test")]  # the test is logged once, as test/*
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "evaluation"} <= artifacts
    report = {a.path for a in client.list_artifacts(run.info.run_id, "evaluation")}
    assert {"evaluation/reliability_test.png", "evaluation/phases_test.png", "evaluation/scored_test.parquet"} <= report


def test_the_experiment_opens_on_training_runs_with_artifacts_beside_the_store(tracked_run):
    experiment = MlflowClient(tracked_run["uri"]).get_experiment("1")
    # MLflow's UI opens a model-training experiment on its runs, not on the GenAI overview.
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    store = tracked_run["folder"] / "mlartifacts"  # beside mlflow.db, not in the current folder
    assert experiment.artifact_location == store.as_uri()
    assert (store / tracked_run["run_id"] / "artifacts" / "config.yaml").is_file()


def test_a_run_says_what_it_is_which_data_it_saw_and_where_it_came_from(tracked_run, phases):
    from mlflow.data import from_pandas

    from cricket_attn.data.deliveries import load_tables
    from cricket_attn.data.splits import SeasonSplit

    run = MlflowClient(tracked_run["uri"]).get_run(tracked_run["run_id"])
    # Composed outside a Hydra command line, the run has no overrides: the default, and when it started.
    assert re.fullmatch(r"transformer default \d\d-\d\d \d\d:\d\d", run.info.run_name)
    assert run.data.tags["comparison"] == run.info.run_name
    tables = load_tables([FIXTURES], phases, tracked_run["folder"] / "data")
    parts = SeasonSplit.from_config(tracked_run["cfg"].data.split).split(tables.deliveries)
    seen = {}
    for item in run.inputs.dataset_inputs:
        context = {t.key: t.value for t in item.tags}["mlflow.data.context"]
        seen[context] = (item.dataset.name, item.dataset.digest, json.loads(item.dataset.profile)["num_rows"])
        # The schema, inferred from a sample, is the one MLflow infers from every row of the split.
        whole = from_pandas(parts[context], source="x")
        assert json.loads(item.dataset.schema) == json.loads(whole.to_dict()["schema"])
    assert seen == {
        "train": ("cricsheet 2008-2023", tables.key, len(parts["train"])),
        "validation": ("cricsheet 2024", tables.key, len(parts["validation"])),
        "test": ("cricsheet 2025-2026", tables.key, len(parts["test"])),
    }
    assert run.data.tags["mlflow.source.name"] == Path(sys.argv[0]).name and run.data.tags["command"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True)
    if head.returncode == 0:  # a git checkout: the run names the code's commit
        assert run.data.tags["mlflow.source.git.commit"] == head.stdout.strip()


def test_system_metrics_are_sampled_while_the_work_runs(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_id = start_run(uri, "probe", "probe", {})
    with system_metrics(uri, run_id, interval=0.5):
        sum(i * i for i in range(3_000_000))  # work for the monitor to see
        time.sleep(1.5)
    metrics = MlflowClient(uri).get_run(run_id).data.metrics
    assert 0 <= metrics["system/cpu_utilization_percentage"] <= 100
    assert metrics["system/system_memory_usage_megabytes"] > 0


def test_the_baselines_pair_with_the_last_tested_run_however_many_untested_came_after(tmp_path):
    """Selection-only and unfinished runs are not what a baselines table pairs with, even 25 of them."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("cricket_attn")

    def run(tested: bool, status: str = "FINISHED") -> str:
        run_id = client.create_run(experiment, tags={"model_family": "transformer"}).info.run_id
        if tested:
            client.log_metric(run_id, "test/log_loss", 1.66)
        client.set_terminated(run_id, status)
        return run_id

    tested = run(True)
    for _ in range(25):
        run(False)
    run(True, status="FAILED")
    assert latest_transformer_run(uri).info.run_id == tested
    assert latest_transformer_run(uri, data_key="no such tables") is None


def test_a_run_ends_finished_failed_or_killed_even_by_sigterm(tmp_path):
    """`tracking.ending`: what a command's run says when it stops. SIGTERM (a scheduler, `kill`, a closing
    session) is made an interrupt while the block runs, so the run says KILLED instead of RUNNING forever."""
    import os
    import signal

    from cricket_attn.tracking import ending

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    before = signal.getsignal(signal.SIGTERM)
    runs = {}
    for how in ("finished", "failed", "terminated"):
        runs[how] = start_run(uri, "probe", how, {})
        try:
            with ending(uri, runs[how]):
                if how == "failed":
                    raise ValueError("a bad value")
                if how == "terminated":
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)  # the signal arrives here
                    raise AssertionError("SIGTERM did not stop the block")
        except (ValueError, KeyboardInterrupt) as err:
            assert how != "finished" and ("SIGTERM" in str(err)) == (how == "terminated")
        assert signal.getsignal(signal.SIGTERM) is before  # the process's own handling is back
    status = {how: MlflowClient(uri).get_run(run_id).info.status for how, run_id in runs.items()}
    assert status == {"finished": "FINISHED", "failed": "FAILED", "terminated": "KILLED"}


def test_logged_model_scores_deliveries_through_pyfunc(tracked_run, deliveries):
    mlflow.set_tracking_uri(tracked_run["uri"])
    model = mlflow.pyfunc.load_model(f"runs:/{tracked_run['run_id']}/model")
    assert model.metadata.signature is not None
    match = deliveries[deliveries["match_id"] == deliveries["match_id"].iloc[0]]
    out = model.predict(plain_types(match))
    assert len(out) == int((~match["is_super_over"]).sum())
    assert (out[list(PROB_COLUMNS)].sum(axis=1) - 1).abs().max() < 1e-6


def test_evaluate_reproduces_the_training_report(tracked_run):
    from cricket_attn.commands.evaluate import evaluate, parse_args

    args = parse_args(
        [
            "--model",
            f"runs:/{tracked_run['run_id']}/model",
            "--tracking-uri",
            tracked_run["uri"],
            "--sources",
            str(tracked_run["cfg"].data.sources[0]),
        ]
    )
    metrics = evaluate(args)
    assert metrics["log_loss"] == pytest.approx(tracked_run["results"]["test/log_loss"], abs=1e-9)
    assert metrics["ece"] == pytest.approx(tracked_run["results"]["test/ece"], abs=1e-9)
    runs = MlflowClient(tracked_run["uri"]).search_runs(["1"], "tags.model_family = 'evaluation'")
    assert runs and runs[0].data.metrics["test/log_loss"] == pytest.approx(metrics["log_loss"])


def test_resume_continues_the_same_mlflow_run(tmp_path):
    first = train(tiny_train_config(tmp_path, "refit=false", "trainer.max_epochs=1"))
    again = train(
        tiny_train_config(
            tmp_path,
            "refit=false",
            "trainer.max_epochs=2",
            f"resume={tmp_path / 'run'}",
            f"paths.output_dir={tmp_path / 'elsewhere'}",
        )
    )
    assert again["mlflow_run_id"] == first["mlflow_run_id"]
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    history = client.get_metric_history(first["mlflow_run_id"], "train/loss")
    assert [m.step for m in history] == sorted(m.step for m in history) and len(history) == 2  # epoch 1, then 2
    assert client.get_run(first["mlflow_run_id"]).info.status == "FINISHED"
    assert len(client.search_runs(["1"])) == 1


def test_a_finished_run_resumed_as_it_was_is_kept(tmp_path, monkeypatch):
    """`make leagues` run again: a stage that finished is resumed with the settings it finished with, and
    nothing is trained or scored again; its results stand and its MLflow run stays FINISHED. With more
    epochs it would train on (the test above)."""
    import cricket_attn.training.train as train_module

    first = train(tiny_train_config(tmp_path, "ensemble=1"))
    calls = []
    for name in ("fit_stage", "report"):
        monkeypatch.setattr(train_module, name, lambda *a, name=name, **k: calls.append(name))
    again = train(tiny_train_config(tmp_path, "ensemble=1", f"resume={tmp_path / 'run'}"))
    assert calls == [] and again["test/log_loss"] == first["test/log_loss"]
    assert again["checkpoint"] == first["checkpoint"] and again["mlflow_run_id"] == first["mlflow_run_id"]
    runs = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").search_runs(["1"])
    assert [r.info.status for r in runs] == ["FINISHED"]


def test_a_resumed_ensemble_refits_only_the_members_not_done(tmp_path, monkeypatch):
    import cricket_attn.training.train as train_module
    from cricket_attn.inference.checkpoints import load_model

    real, calls = train_module.fit_stage, []

    def power_cut_in_the_second_member(*args, **kwargs):
        calls.append(kwargs.get("max_epochs"))
        if len(calls) == 3:  # selection, first member, second member
            raise RuntimeError("power cut")
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "fit_stage", power_cut_in_the_second_member)
    with pytest.raises(RuntimeError, match="power cut"):
        train(tiny_train_config(tmp_path, "ensemble=2"))
    first_member = tmp_path / "run" / "checkpoints" / "refit" / "last.ckpt"
    written = first_member.stat().st_mtime_ns
    calls.clear()
    again = train(tiny_train_config(tmp_path, "ensemble=2", f"resume={tmp_path / 'run'}"))
    assert len(calls) == 1 and calls[0] == again["selection/epochs"]  # the second member's refit only
    assert first_member.stat().st_mtime_ns == written
    assert len(load_model(again["checkpoint"])[0].members) == 2
    runs = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").search_runs(["1"])
    assert [r.info.status for r in runs] == ["FINISHED"]


def test_a_selection_only_run_continues_to_its_refit(tmp_path, monkeypatch):
    """Try a recipe on the validation season alone (refit=false), then finish the one worth it: `resume=...
    refit=true` trains the refit members for the epochs already chosen, in the same MLflow run, which ends
    with one model, the refit's, and says it was continued; other settings stay fixed."""
    import cricket_attn.training.train as train_module
    from cricket_attn.inference.checkpoints import load_model

    overrides = ("ensemble=2", "data.teacher=null")
    first = train(tiny_train_config(tmp_path, *overrides, "refit=false"))
    selection = sorted((tmp_path / "run" / "checkpoints").glob("*.ckpt"))
    written = {p: p.stat().st_mtime_ns for p in selection}
    real, calls = train_module.fit_stage, []

    def recorded(*args, **kwargs):
        calls.append(args[4] if len(args) > 4 else kwargs.get("stage"))
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "fit_stage", recorded)
    again = train(tiny_train_config(tmp_path, *overrides, "refit=true", f"resume={tmp_path / 'run'}"))
    # Its schedule ran out at the epochs this resume still gives: the selection stage is not fitted again.
    assert calls == ["refit 1/2", "refit 2/2"]
    assert {p: p.stat().st_mtime_ns for p in selection} == written
    assert again["selection/epochs"] == first["selection/epochs"] and again["mlflow_run_id"] == first["mlflow_run_id"]
    assert "refit" in again["checkpoint"] and len(load_model(again["checkpoint"])[0].members) == 2
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.get_run(first["mlflow_run_id"])
    assert run.data.tags["refit_continued"] == "true" and run.info.status == "FINISHED"
    assert run.info.run_name.endswith(" (refit continued)")
    assert run.data.metrics["test/log_loss"] == pytest.approx(again["test/log_loss"])
    assert again["test/log_loss"] != first["test/log_loss"]
    assert [m.source_run_id for m in client.search_logged_models(["1"])] == [first["mlflow_run_id"]]
    saved = OmegaConf.create({"refit": False, "model": {"d_model": 8}})
    (tmp_path / "saved" / ".hydra").mkdir(parents=True)
    OmegaConf.save(saved, tmp_path / "saved" / ".hydra" / "config.yaml")
    resumed = OmegaConf.create({"resume": str(tmp_path / "saved")})
    assert resume_config(resumed, ["refit=true"]).refit is True
    with pytest.raises(ConfigError, match="refit cannot change"):  # once refitted, a run stays so
        OmegaConf.save(OmegaConf.merge(saved, {"refit": True}), tmp_path / "saved" / ".hydra" / "config.yaml")
        resume_config(resumed, ["refit=false"])


def test_a_selection_cut_short_is_trained_on_when_resumed(tmp_path, monkeypatch):
    """A selection stage stopped by `max_steps` part way through its last epoch has not run its schedule:
    resumed without the cap, it is fitted on before its refit; one that trained every epoch is not (the
    test above), nor one of another run's layout, with no record of where it ended."""
    import cricket_attn.training.train as train_module

    overrides = ("ensemble=1", "data.teacher=null")
    train(tiny_train_config(tmp_path, *overrides, "refit=false", "+trainer.max_steps=4"))  # 3 batches an epoch
    state = read_run_file(tmp_path / "run")
    assert state["selection_ran_to"] == 1 and state["selection_checkpoint"]
    real, calls = train_module.fit_stage, []

    def power_cut(*args, **kwargs):
        raise RuntimeError("power cut")

    monkeypatch.setattr(train_module, "fit_stage", power_cut)  # trained on, and killed: the end no longer stands
    with pytest.raises(RuntimeError, match="power cut"):
        train(
            tiny_train_config(tmp_path, *overrides, "refit=false", "trainer.max_epochs=3", f"resume={tmp_path / 'run'}")
        )
    assert "selection_ran_to" not in read_run_file(tmp_path / "run")

    def recorded(*args, **kwargs):
        calls.append(args[4] if len(args) > 4 else kwargs.get("stage"))
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "fit_stage", recorded)
    train(tiny_train_config(tmp_path, *overrides, "refit=true", "+trainer.max_steps=-1", f"resume={tmp_path / 'run'}"))
    assert calls == ["selection", "refit 1/1"]
    cfg = OmegaConf.create({"trainer": {"max_epochs": 2}})
    kept = {"selection_checkpoint": "best.ckpt", "selection_final": False}
    assert selection_done({**kept, "selection_ran_to": 2}, cfg)
    assert not selection_done({**kept, "selection_ran_to": 1}, cfg)
    assert not selection_done(kept, cfg)  # a run file written before the stage's end was recorded
    assert not selection_done({**kept, "selection_ran_to": 2, "selection_checkpoint": ""}, cfg)  # no model kept
    assert selection_done({**kept, "selection_final": True, "selection_ran_to": 1}, cfg)  # stopped early


def test_a_resume_may_choose_other_callbacks_as_usage_says(tmp_path):
    """`resume=<run> callbacks=ema` answered "callbacks='ema': must be a mapping": a config group given on a
    resume's command line is the group as composed, as it would be for a new run; the run's other settings
    stay its own."""
    run_cfg = tiny_train_config(tmp_path, "trainer.max_epochs=3")
    (tmp_path / "saved" / ".hydra").mkdir(parents=True)
    OmegaConf.save(run_cfg, tmp_path / "saved" / ".hydra" / "config.yaml")
    given = tiny_train_config(tmp_path, "callbacks=ema", f"resume={tmp_path / 'saved'}")
    merged = resume_config(given, ["callbacks=ema", "trainer.max_epochs=5", f"resume={tmp_path}"])
    assert merged.callbacks == given.callbacks and merged.callbacks != run_cfg.callbacks
    assert "ema" in OmegaConf.to_yaml(merged.callbacks).lower()
    assert merged.trainer.max_epochs == 5 and merged.model == run_cfg.model
    with pytest.raises(ConfigError, match="model cannot change"):
        resume_config(given, ["model=transformer"])


def test_a_registered_selection_model_survives_its_runs_refit(tmp_path):
    """A selection-only run whose model a user registered, then continued to its refit: the registered
    version keeps its model (it is not the run's to delete) and the refit's model is the next version."""
    from mlflow.entities import LoggedModelStatus

    overrides = ("ensemble=1", "trainer.max_epochs=1", "data.teacher=null", "mlflow.registered_model_name=ball")
    first = train(tiny_train_config(tmp_path, *overrides, "refit=false"))
    train(tiny_train_config(tmp_path, *overrides, "refit=true", f"resume={tmp_path / 'run'}"))
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    versions = sorted(client.search_model_versions("name = 'ball'"), key=lambda v: int(v.version))
    assert [int(v.version) for v in versions] == [1, 2] and {v.run_id for v in versions} == {first["mlflow_run_id"]}
    models = {m.model_id: m for m in client.search_logged_models(["1"])}
    assert set(models) == {v.source.removeprefix("models:/") for v in versions}  # both kept, none else
    assert {m.status for m in models.values()} == {LoggedModelStatus.READY}


def test_a_kill_while_the_model_is_logged_leaves_one_ready_model_after_resume(tmp_path, monkeypatch):
    """Ctrl-C while the final model's files are copied leaves its MLflow model PENDING; the resumed run logs
    the model once, past every fit, and the pending one is gone."""
    from mlflow.entities import LoggedModelStatus

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the model is made, its files not yet in the store

    overrides = ("ensemble=1", "trainer.max_epochs=1", "data.teacher=null")
    monkeypatch.setattr(MlflowClient, "log_model_artifacts", killed)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_train_config(tmp_path, *overrides))
    monkeypatch.undo()
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert [m.status for m in client.search_logged_models(["1"])] == [LoggedModelStatus.PENDING]
    again = train(tiny_train_config(tmp_path, *overrides, f"resume={tmp_path / 'run'}"))
    models = client.search_logged_models(["1"])
    assert [(m.name, m.status, m.source_run_id) for m in models] == [
        ("model", LoggedModelStatus.READY, again["mlflow_run_id"])
    ]
    assert client.get_run(again["mlflow_run_id"]).info.status == "FINISHED"
    assert math.isfinite(again["test/log_loss"])


def test_two_runs_started_together_on_a_new_store_each_get_their_folder_and_run(tmp_path):
    """Two users start a training at once on a store that does not exist yet: the store is made once, and
    each run has its own output folder (the time, then the process id), run file, checkpoints and MLflow run."""
    logs = [tmp_path / f"stderr{i}.txt" for i in range(2)]
    started = []
    for log in logs:
        with log.open("w") as err:
            started.append(
                subprocess.Popen(
                    train_command(tmp_path, f"paths.root_dir={tmp_path}", new_store=True),
                    cwd=tmp_path,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                )
            )
    for process, log in zip(started, logs):
        assert process.wait(timeout=600) == 0, log.read_text()[-3000:]
    folders = sorted((tmp_path / "outputs").glob("*/*"))
    assert len(folders) == 2 and all(re.fullmatch(r"\d\d-\d\d-\d\d-\d+", f.name) for f in folders)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = {json.loads((f / "mlflow_run.json").read_text())["run_id"]: f for f in folders}
    assert len(runs) == 2
    for run_id, folder in runs.items():
        run = client.get_run(run_id)
        assert run.info.status == "FINISHED" and run.data.tags["output_dir"] == str(folder)
        assert Path(run.data.tags["checkpoint"]).is_relative_to(folder)


def test_a_parallel_sweep_on_a_new_store_runs_every_job(tmp_path):
    """`cricket-attn-train -m hydra/launcher=joblib hydra.launcher.n_jobs=2 seed=0,1` on a store that does not
    exist yet: both jobs make it together and finish, in one sweep folder, `multirun/<date>/<time>-<pid>/<job>`."""
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    overrides = (f"paths.root_dir={tmp_path}", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seed=0,1")
    out = subprocess.run(
        train_command(tmp_path, *overrides, multirun=True, new_store=True), cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    (sweep,) = (tmp_path / "multirun").glob("*/*")
    runs = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").search_runs(["1"])
    assert sorted((r.data.tags["sweep_job"], r.data.params["seed"], r.info.status) for r in runs) == [
        ("0", "0", "FINISHED"),
        ("1", "1", "FINISHED"),
    ]
    for r in runs:
        assert json.loads((sweep / r.data.tags["sweep_job"] / "mlflow_run.json").read_text())["run_id"] == r.info.run_id


def test_a_crash_marks_the_run_failed(tmp_path, monkeypatch):
    import cricket_attn.training.train as train_module

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(train_module, "report", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        train(tiny_train_config(tmp_path, "refit=false", "trainer.max_epochs=1"))
    runs = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").search_runs(["1"])
    assert [r.info.status for r in runs] == ["FAILED"]


def test_unreachable_tracking_uri_fails_fast_naming_it(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    uri = f"http://127.0.0.1:{port}"
    start = time.perf_counter()
    with pytest.raises(TrackingError, match=f"MLflow tracking URI {uri} cannot be reached"):
        train(tiny_train_config(tmp_path, f"paths.mlflow_uri={uri}"))
    assert time.perf_counter() - start < 30 and not (tmp_path / "run" / "checkpoints").exists()
    with pytest.raises(TrackingError, match="sqlite:////no/such/folder/mlflow.db"):
        check_tracking_uri("sqlite:////no/such/folder/mlflow.db")


def test_mlflow_server_serves_the_run(tracked_run):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = shutil.which("mlflow") or str(Path(sys.executable).with_name("mlflow"))
    server = subprocess.Popen(
        [
            exe,
            "server",
            "--backend-store-uri",
            tracked_run["uri"],
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        uri = f"http://127.0.0.1:{port}"
        for _ in range(120):
            try:
                check_tracking_uri(uri, timeout=1)
                break
            except TrackingError:
                time.sleep(0.5)
        run = MlflowClient(uri).get_run(tracked_run["run_id"])
        assert run.info.status == "FINISHED"
        assert run.data.metrics["test/log_loss"] == pytest.approx(tracked_run["results"]["test/log_loss"])
        assert run.data.params["model.n_layers"] == "1"
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_mlflow_models_serve_scores_deliveries_over_http(tracked_run, deliveries, tmp_path):
    """`mlflow models serve -m runs:/<id>/model --env-manager local`, as docs/usage.md gives it: a match's
    deliveries posted to /invocations come back scored as the pyfunc model scores them in process."""
    import json
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = shutil.which("mlflow") or str(Path(sys.executable).with_name("mlflow"))
    model_uri = f"runs:/{tracked_run['run_id']}/model"
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [exe, "models", "serve", "-m", model_uri, "--env-manager", "local", "-h", "127.0.0.1", "-p", str(port)],
        # It starts `uvicorn` by name: the environment's own, as with the environment activated.
        env={
            **os.environ,
            "MLFLOW_TRACKING_URI": tracked_run["uri"],
            "PATH": f"{Path(exe).parent}:{os.environ['PATH']}",
        },
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                with urllib.request.urlopen(f"{url}/ping", timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                assert server.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
                time.sleep(0.5)
        match = plain_types(deliveries[deliveries["match_id"] == deliveries["match_id"].iloc[0]])
        body = json.dumps({"dataframe_split": json.loads(match.to_json(orient="split", index=False))}).encode()
        request = urllib.request.Request(f"{url}/invocations", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as reply:
            served = pd.DataFrame(json.loads(reply.read())["predictions"])
        mlflow.set_tracking_uri(tracked_run["uri"])
        local = mlflow.pyfunc.load_model(model_uri).predict(match)
        assert len(served) == len(local) == int((~match["is_super_over"]).sum())
        for column in PROB_COLUMNS:
            assert abs(served[column].to_numpy() - local[column].to_numpy()).max() < 1e-6, column
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def train_command(folder: Path, *overrides: str, multirun: bool = False, new_store: bool = False) -> list[str]:
    """`cricket-attn-train` (`-m`: a sweep) on the fixture matches, one short epoch a job, tracked in `folder` (an
    empty store's copy; `new_store`: none there yet)."""
    uri = f"sqlite:///{folder / 'mlflow.db'}" if new_store else empty_store(folder)
    return [
        TRAIN,
        *(["-m"] if multirun else []),
        f"data.sources=[{FIXTURES}]",
        f"data.data_dir={folder / 'data'}",
        "debug=fast",
        "model.numeric_hidden=16",
        f"paths.mlflow_uri={uri}",
        "mlflow.log_model=false",
        *overrides,
    ]


def run_sweep(folder: Path, *overrides: str) -> None:
    """`cricket-attn-train -m` on the fixture matches, its jobs in `folder`/sweep."""
    command = train_command(folder, f"hydra.sweep.dir={folder / 'sweep'}", *overrides, multirun=True)
    out = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]


def test_a_sweep_gives_each_job_its_run_and_minimises_the_validation_loss_not_the_test(tmp_path):
    """`cricket-attn-train -m` (here the Optuna search, two trials): each job its own folder and MLflow run,
    tagged with its sweep and job number and named by the settings it was given; the search's objective is
    the validation loss."""
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    import yaml

    run_sweep(tmp_path, "hparams_search=optuna", "hydra.sweeper.n_trials=2")
    assert (tmp_path / "sweep" / "0" / "mlflow_run.json").is_file() and (tmp_path / "sweep" / "1").is_dir()
    runs = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").search_runs(["1"])
    assert sorted(r.data.tags["sweep_job"] for r in runs) == ["0", "1"]
    assert runs[0].data.params["optim.lr"] != runs[1].data.params["optim.lr"]  # each trial its own settings
    for r in runs:  # named by its family and the settings of the command line and the trial, then its start
        name = r.info.run_name.rsplit(" ", 2)[0]
        settings = name.removeprefix("transformer ").split(",")  # in name order, the trial's among them
        assert settings == sorted(settings) and {"debug=fast", "hparams_search=optuna"} <= set(settings)
        assert f"optim.lr={r.data.params['optim.lr']}" in settings
    best = yaml.safe_load((tmp_path / "sweep" / "optimization_results.yaml").read_text())
    val = {r.data.metrics["calibration/val_log_loss_after"] for r in runs}  # the final model's temperature
    assert best["best_value"] == pytest.approx(min(val), abs=1e-6)
    assert best["best_value"] != pytest.approx(min(r.data.metrics["test/log_loss"] for r in runs), abs=1e-6)


def test_resume_from_the_folder_alone_takes_the_runs_own_config_and_store(tmp_path):
    """The README's form: `cricket-attn-train resume=<folder>`, after a run started with overrides and a store
    of its own; only what may change mid-run can be given again."""
    store = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    started = [
        f"data.sources=[{FIXTURES}]",
        f"data.data_dir={tmp_path / 'data'}",
        "data.teacher=null",
        "model.d_model=8",
        "model.n_heads=2",
        "model.n_layers=1",
        "model.numeric_hidden=16",
        "optim.warmup_steps=2",
        "refit=false",
        "trainer.max_epochs=1",
        "mlflow.log_model=false",
        f"paths.mlflow_uri={store}",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    first = subprocess.run([TRAIN, *started], cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-2000:]
    again = subprocess.run(
        [TRAIN, f"resume={tmp_path / 'run'}", "trainer.max_epochs=2", f"hydra.run.dir={tmp_path / 'r2'}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    client = MlflowClient(store)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    steps = [m.step for m in client.get_metric_history(runs[0].info.run_id, "train/loss")]
    assert len(steps) == 2 and steps == sorted(steps)  # epoch 2 added after epoch 1, in the same run
    assert runs[0].data.params["model.d_model"] == "8"
    with pytest.raises(ConfigError) as refused:  # the command prints it as one line, exit 2 (a ConfigError)
        resume_config(OmegaConf.create({"resume": str(tmp_path / "run")}), ["model.d_model=16"])
    assert str(refused.value) == (
        "resume: model.d_model cannot change in a resumed run (it fixes the model, the data, the "
        "split or what was chosen from them); the run has model.d_model=8"
    )


def test_a_damaged_checkpoint_or_run_file_on_resume(tmp_path, caplog):
    """A kill while `last.ckpt` was written: the resume continues from the run's earlier checkpoint, or, with
    none, says so in one line; a damaged mlflow_run.json is one line naming it, not a traceback (run in the
    process here: the command prints a ResumeError as one line with exit 2, as it does a ConfigError)."""
    run, settings = tmp_path / "run", ("data.teacher=null", "refit=false")
    train(tiny_train_config(tmp_path, *settings, "trainer.max_epochs=1"))
    checkpoints = run / "checkpoints"
    last = checkpoints / "last.ckpt"

    def resume(epochs: int) -> dict:
        return train(tiny_train_config(tmp_path, *settings, f"trainer.max_epochs={epochs}", f"resume={run}"))

    (best,) = checkpoints.glob("best-*.ckpt")
    last.write_bytes(last.read_bytes()[:1000])
    with caplog.at_level("WARNING", logger="cricket_attn"):
        assert resume(2)["selection/epochs"] in (1, 2)
    assert f"resume: {last} is damaged" in caplog.text and f"continuing from the earlier {best.name}" in caplog.text
    last.write_bytes(last.read_bytes()[:1000])
    for earlier in checkpoints.glob("best-*.ckpt"):
        earlier.unlink()
    with pytest.raises(ResumeError) as refused:
        resume(3)
    assert str(refused.value).startswith(f"{last} is damaged (") and "\n" not in str(refused.value)
    assert str(refused.value).endswith("the run has no earlier checkpoint: start a new run, or restore the file")
    run_file = run / "mlflow_run.json"
    run_file.write_text(run_file.read_text()[:20])
    with pytest.raises(ResumeError, match=rf"^{re.escape(str(run_file))} is damaged \(.*: start a new run, or restore"):
        resume(3)


def test_a_new_store_is_made_without_a_word(tmp_path, capfd):
    """A command's first run makes the project's store: MLflow's and Alembic's INFO lines of its migrations are
    held back (a command prints its summary, or one line), and the loggers' levels are restored after."""
    import logging

    loggers = [logging.getLogger(name) for name in ("mlflow.store.db.utils", "alembic.runtime.migration")]
    levels = [logger.level for logger in loggers]
    capfd.readouterr()
    check_tracking_uri(f"sqlite:///{tmp_path / 'new.db'}")
    printed = capfd.readouterr()
    said = printed.err + printed.out
    assert (tmp_path / "new.db").is_file() and "Creating initial MLflow database tables" not in said
    assert "alembic" not in said.lower()
    assert [logger.level for logger in loggers] == levels
