"""The ablation set runs each variant as an ordinary tracked training run, pairs it with the default,
and continues a stopped ablation without training anything twice."""

from __future__ import annotations

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from cricket_attn import tracking
from cricket_attn.training.ablation import Job, finished_runs, plan, read_record, recorded_runs, run_ablation, settings_digest, train_command
from cricket_attn.metrics import paired_difference
from cricket_attn.config import CONF_DIR
from tests.conftest import FIXTURES

TINY = [f"data.sources=[{FIXTURES}]", "data.min_count=5", "data.batch_size=8", "model.d_model=8", "model.n_heads=2",
        "model.n_layers=1", "model.numeric_hidden=16", "trainer.max_epochs=2", "optim.warmup_steps=2",
        "data.teacher.folds=3", "data.teacher.model.max_iter=20"]


def ablation_config(folder, *overrides: str):
    extra = ",".join(f"'{o}'" for o in [*TINY, f"data.data_dir={folder / 'data'}"])
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="ablation", overrides=[
            f"output_dir={folder / 'out'}", f"paths.mlflow_uri=sqlite:///{folder / 'mlflow.db'}", "n_boot=200",
            f"record_dir={folder / 'record'}",
            f"extra=[{extra}]", *overrides])


def test_plan_is_seed_by_seed_and_checks_the_variants(tmp_path):
    cfg = ablation_config(tmp_path, "only=[self_only]", "seeds=[0,1]")
    assert plan(cfg) == [Job(v, p, s) for s in (0, 1) for v in ("default", "self_only") for p in ("test", "season_back")]
    assert len(plan(ablation_config(tmp_path))) == 3 * 2 * len(ablation_config(tmp_path).variants)
    with pytest.raises(ValueError, match=r"only: unknown variant\(s\) \['selfonly'\]"):
        plan(ablation_config(tmp_path, "only=[selfonly]"))
    context = ablation_config(tmp_path, "ablation_set=context")
    assert context.name == "context" and "history_32" in context.variants and "last_6" not in context.variants
    command = train_command(cfg, Job("self_only", "season_back", 1))
    assert "model.context=0" in command and "data.split.train_until=2022" in command and "seed=1" in command
    assert "+logger.tags.variant=self_only" in command and "ensemble=1" in command


def test_ablation_runs_pairs_and_continues(tmp_path):
    # One protocol, the one that moves the split (the plan test above covers both): two training runs.
    cfg = ablation_config(tmp_path, "only=[self_only]", "seeds=[0]", "~protocols.test")
    table = run_ablation(cfg)
    runs = finished_runs(cfg)
    assert set(runs) == set(plan(cfg)) and len(runs) == 2  # ordinary training runs, finished and tagged
    from mlflow import MlflowClient

    client = MlflowClient(cfg.paths.mlflow_uri)
    run = client.get_run(runs[Job("self_only", "season_back", 0)])
    assert run.data.tags["protocol"] == "season_back" and run.data.tags["variant"] == "self_only"
    assert run.data.params["model.context"] == "0" and run.data.params["data.split.test"] == "[2024]"
    # The report pairs self_only with the default, per protocol, from the runs' scored test balls.
    assert "| self_only |" in table and "| default |" in table and table.count("[") >= 2
    seeds = pd.read_csv(tmp_path / "out" / "ablation_seeds.csv")
    assert len(seeds) == 2 and seeds.loc[seeds["variant"] == "self_only", "diff"].notna().all()
    mine = seeds[seeds["variant"] == "self_only"].iloc[0]  # its cell shows the epochs its refit trained
    assert f"| self_only | {mine['log_loss']:.4f} ({mine['epochs']}) |" in table
    val = {job.variant: rec["val_log_loss"] for job, rec in recorded_runs(cfg).items()}  # and on its validation season
    assert f"| {val['self_only'] - val['default']:+.4f} |" in table
    assert (tmp_path / "out" / "season_back" / "self_only" / "seed0" / "train.log").is_file()
    summary = client.search_runs([run.info.experiment_id], "tags.ablation_summary = 'attention'")
    assert len(summary) == 1 and "season_back/self_only/diff" in summary[0].data.metrics
    assert run.data.tags["settings"] == settings_digest(["model.context=0"], cfg.extra)  # a digest of its overrides
    # Another set with the same settings under other names finds these runs and trains nothing.
    context = ablation_config(tmp_path, "ablation_set=context", "only=[self_only]", "seeds=[0]", "~protocols.test")
    assert {j: r for j, r in finished_runs(context).items()} == {j: runs[j] for j in runs}
    # Its report pairs every variant with its control too (self_only): the default against it is the
    # same balls' difference, negated.
    both = run_ablation(context)
    assert "Against the control, `self_only`" in both and "| self_only | control |" in both
    control_row = both.split("Against the control")[1].split("| default | ")[1]
    assert float(control_row.split(" ")[0]) == pytest.approx(-seeds.loc[seeds["variant"] == "self_only", "diff"].iloc[0],
                                                             abs=1e-4)
    # Run again: nothing is trained twice, the same table comes back.
    again = run_ablation(cfg)
    assert finished_runs(cfg) == runs and again == table
    assert len(client.search_runs([run.info.experiment_id], "tags.ablation_summary = 'attention'")) == 1

    # The record holds each run's per-match scores; from them alone the paired difference and its
    # interval are those of the two runs' scored balls.
    record = recorded_runs(cfg)
    assert set(record) == set(runs) and (tmp_path / "record" / "attention.jsonl").read_text().count("\n") == 2
    balls = tracking.load_scored(cfg.paths.mlflow_uri, runs[Job("self_only", "season_back", 0)])
    assert sum(m[1] for m in record[Job("self_only", "season_back", 0)]["matches"]) == len(balls)
    direct = paired_difference(balls, tracking.load_scored(cfg.paths.mlflow_uri, runs[Job("default", "season_back", 0)]),
                               n_boot=200)
    assert f"{direct['diff']:+.4f} [{direct['ci_low']:+.4f}, {direct['ci_high']:+.4f}]" in table
    # A clone on another machine (an empty store, the committed record) trains nothing and reports the same.
    clone = ablation_config(tmp_path, "only=[self_only]", "seeds=[0]", "~protocols.test",
                            f"paths.mlflow_uri=sqlite:///{tmp_path / 'other.db'}")
    assert finished_runs(clone) == {} and run_ablation(clone) == table
    # A damaged record is refused with its file and line.
    (tmp_path / "record" / "attention.jsonl").write_text('{"settings": "x"}\n')
    with pytest.raises(ValueError, match=r"attention.jsonl: line 1: not an ablation record"):
        read_record(tmp_path / "record")
