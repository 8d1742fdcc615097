"""The ablation set runs each variant as an ordinary tracked training run, launched through Hydra's launcher,
pairs it with the default, and continues a stopped ablation without training anything twice."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from mlflow import MlflowClient

from cricket_attn import tracking
from cricket_attn.commands.ablate import run_ablation
from cricket_attn.config import CONF_DIR
from cricket_attn.data import deliveries, trees
from cricket_attn.metrics import paired_difference
from cricket_attn.training.ablation.jobs import Job, job_folder, job_overrides, plan, run_key, settings_digest
from cricket_attn.training.ablation.launch import launcher_overrides
from cricket_attn.training.ablation.record import finished_runs, read_record, recorded_runs
from tests.conftest import TINY_TRAINING

# One variant and the default, one seed, on the protocol that moves the split (the plan test covers both).
TWO_RUNS = ("only=[self_only]", "seeds=[0]", "~protocols.test")
SELF_ONLY, DEFAULT = Job("self_only", "season_back", 0), Job("default", "season_back", 0)


def ablation_config(folder, *overrides: str):
    extra = ",".join(f"'{o}'" for o in [*TINY_TRAINING, f"data.data_dir={folder / 'data'}"])
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(
            config_name="ablation",
            overrides=[
                f"output_dir={folder / 'out'}",
                f"paths.mlflow_uri=sqlite:///{folder / 'mlflow.db'}",
                "n_boot=200",
                f"record_dir={folder / 'record'}",
                f"extra=[{extra}]",
                *overrides,
            ],
        )


def test_plan_is_seed_by_seed_and_checks_the_variants(tmp_path):
    cfg = ablation_config(tmp_path, "only=[self_only]", "seeds=[0,1]")
    assert plan(cfg) == [
        Job(v, p, s) for s in (0, 1) for v in ("default", "self_only") for p in ("test", "season_back")
    ]
    assert len(plan(ablation_config(tmp_path))) == 3 * 2 * len(ablation_config(tmp_path).variants)
    with pytest.raises(ValueError, match=r"only: unknown variant\(s\) \['selfonly'\]"):
        plan(ablation_config(tmp_path, "only=[selfonly]"))
    context = ablation_config(tmp_path, "ablation_set=context")
    assert context.name == "context" and "history_32" in context.variants and "last_6" not in context.variants
    overrides = job_overrides(cfg, Job("self_only", "season_back", 1))
    assert "model.context=0" in overrides and "data.split.train_until=2022" in overrides and "seed=1" in overrides
    assert "+logger.tags.variant=self_only" in overrides and "ensemble=1" in overrides
    assert "hydra.sweep.subdir=season_back/self_only/seed1" in overrides  # its folder under output_dir


def test_a_killed_run_is_resumed_in_its_folder_with_its_own_config(tmp_path):
    cfg = ablation_config(tmp_path)
    folder = job_folder(cfg, SELF_ONLY)
    folder.mkdir(parents=True)
    (folder / tracking.RUN_FILE).write_text("{}")
    overrides = job_overrides(cfg, SELF_ONLY)
    # Only the folder: the run's settings come from its .hydra/config.yaml, which the resume leaves as it is.
    assert f"resume={folder}" in overrides and "hydra.output_subdir=null" in overrides
    assert not any(o.startswith(("model.", "seed=", "+logger.tags")) for o in overrides)


def test_the_launcher_is_the_one_chosen_else_joblib_with_jobs_at_once(tmp_path):
    cfg = ablation_config(tmp_path, "jobs=3")
    assert launcher_overrides(cfg) == ["hydra/launcher=joblib", "hydra.launcher.n_jobs=3"]
    given = [
        "hydra.run.dir=x",
        "hydra/launcher=submitit_slurm",
        "hydra.launcher.partition=gpu",
        "+hydra.launcher.additional_parameters.mail-type=END",
        "hydra/job_logging=stages",
    ]
    assert launcher_overrides(cfg, given) == given[1:4]


@pytest.fixture(scope="module")
def ablation(tmp_path_factory):
    """The two runs, trained at once through the joblib launcher (jobs=2), recorded and reported."""
    folder = tmp_path_factory.mktemp("ablation")
    cfg = ablation_config(folder, *TWO_RUNS, "jobs=2")
    table = run_ablation(cfg)
    return SimpleNamespace(
        folder=folder,
        cfg=cfg,
        table=table,
        runs=finished_runs(cfg),
        seeds=pd.read_csv(folder / "out" / "ablation_seeds.csv"),
        client=MlflowClient(cfg.paths.mlflow_uri),
    )


def ablation_runs(ablation) -> list:
    experiment = ablation.client.get_experiment_by_name(ablation.cfg.experiment)
    return ablation.client.search_runs([experiment.experiment_id], "tags.ablation != ''")


@pytest.mark.e2e
def test_each_job_is_a_finished_training_run_tagged_in_its_folder(ablation):
    assert set(ablation.runs) == set(plan(ablation.cfg)) == {SELF_ONLY, DEFAULT}
    run = ablation.client.get_run(ablation.runs[SELF_ONLY])
    assert run.info.status == "FINISHED"
    assert run.data.tags["protocol"] == "season_back" and run.data.tags["variant"] == "self_only"
    assert run.data.tags["settings"] == run_key(ablation.cfg, SELF_ONLY)[0]
    assert run.data.params["model.context"] == "0" and run.data.params["data.split.test"] == "[2024]"
    folder = ablation.folder / "out" / "season_back" / "self_only" / "seed0"
    assert (folder / "train.log").is_file() and (folder / tracking.RUN_FILE).is_file()
    assert "test/log_loss:" in (folder / "console.log").read_text()  # what the run printed


@pytest.mark.e2e
def test_jobs_2_trains_two_runs_at_once(ablation):
    first, second = (ablation.client.get_run(ablation.runs[job]).info for job in (SELF_ONLY, DEFAULT))
    assert first.start_time < second.end_time and second.start_time < first.end_time


@pytest.mark.e2e
def test_the_report_pairs_the_variant_with_the_default_on_the_same_balls(ablation):
    table, cfg = ablation.table, ablation.cfg
    assert "| self_only |" in table and "| default |" in table
    recorded = recorded_runs(cfg)
    mine = recorded[SELF_ONLY]  # its cell shows the epochs its refit trained (the seeds' file: 6 figures)
    assert f"| self_only | {mine['log_loss']:.4f} ({int(mine['epochs'])}) |" in table
    assert ablation.seeds.set_index("variant").loc["self_only", "log_loss"] == pytest.approx(mine["log_loss"], rel=1e-5)
    val = {job.variant: rec["val_log_loss"] for job, rec in recorded.items()}  # and on its validation season
    assert f"| {val['self_only'] - val['default']:+.4f} |" in table
    balls = [tracking.load_scored(cfg.paths.mlflow_uri, ablation.runs[job]) for job in (SELF_ONLY, DEFAULT)]
    direct = paired_difference(*balls, n_boot=200)  # the interval the record gives is that of the scored balls
    assert f"{direct['diff']:+.4f} [{direct['ci_low']:+.4f}, {direct['ci_high']:+.4f}]" in table
    summary = ablation.client.search_runs(
        [ablation.client.get_run(ablation.runs[SELF_ONLY]).info.experiment_id], "tags.ablation_summary = 'attention'"
    )
    assert len(summary) == 1 and summary[0].data.metrics["season_back/self_only/diff"] == pytest.approx(
        direct["diff"], abs=1e-5
    )


@pytest.mark.e2e
def test_the_seeds_csv_has_each_run_and_its_paired_difference(ablation):
    seeds = ablation.seeds.set_index("variant")
    assert sorted(seeds.index) == ["default", "self_only"] and (seeds["seed"] == 0).all()
    assert pd.isna(seeds.loc["default", "diff"]) and pd.notna(seeds.loc["self_only", "diff"])
    assert seeds.loc["self_only", "run"] == ablation.client.get_run(ablation.runs[SELF_ONLY]).info.run_name


@pytest.mark.e2e
def test_the_record_holds_each_runs_balls_and_loss_by_match(ablation):
    record = recorded_runs(ablation.cfg)
    assert set(record) == set(ablation.runs)
    assert (ablation.folder / "record" / "attention.jsonl").read_text().count("\n") == 2
    balls = tracking.load_scored(ablation.cfg.paths.mlflow_uri, ablation.runs[SELF_ONLY])
    assert sum(m[1] for m in record[SELF_ONLY]["matches"]) == len(balls)


@pytest.mark.e2e
def test_another_set_with_the_same_settings_finds_the_runs(ablation):
    context = ablation_config(ablation.folder, "ablation_set=context", *TWO_RUNS)
    assert finished_runs(context) == ablation.runs


@pytest.mark.e2e
def test_the_control_table_pairs_every_variant_with_the_control(ablation):
    # The context set's control is self_only: the default against it is the same balls' difference, negated.
    context = ablation_config(
        ablation.folder, "ablation_set=context", *TWO_RUNS, f"output_dir={ablation.folder / 'context'}"
    )
    table = run_ablation(context)
    assert "Against the control, `self_only`" in table and "| self_only | control |" in table
    default_row = table.split("Against the control")[1].split("| default | ")[1]
    assert float(default_row.split(" ")[0]) == pytest.approx(
        -ablation.seeds.set_index("variant").loc["self_only", "diff"], abs=1e-4
    )


@pytest.mark.e2e
def test_running_again_trains_nothing_and_reports_the_same(ablation):
    trained = {r.info.run_id for r in ablation_runs(ablation)}
    assert run_ablation(ablation.cfg) == ablation.table
    assert {r.info.run_id for r in ablation_runs(ablation)} == trained and finished_runs(ablation.cfg) == ablation.runs
    experiment = ablation.client.get_run(ablation.runs[SELF_ONLY]).info.experiment_id
    assert len(ablation.client.search_runs([experiment], "tags.ablation_summary = 'attention'")) == 1


@pytest.mark.e2e
def test_a_clone_with_an_empty_store_reports_from_the_record(ablation):
    clone = ablation_config(
        ablation.folder,
        *TWO_RUNS,
        f"paths.mlflow_uri=sqlite:///{ablation.folder / 'other.db'}",
        f"output_dir={ablation.folder / 'clone'}",
    )
    assert finished_runs(clone) == {} and run_ablation(clone) == ablation.table
    assert not (ablation.folder / "clone" / "season_back").exists()  # nothing trained


def test_a_damaged_record_is_refused_with_its_file_and_line(tmp_path):
    (tmp_path / "attention.jsonl").write_text('{"settings": "x"}\n')
    with pytest.raises(ValueError, match=r"attention.jsonl: line 1: not an ablation record"):
        read_record(tmp_path)


@pytest.mark.parametrize(
    "override, message",
    [
        ("jobs=0", "jobs=0: must be at least 1"),
        ("jobs=two", "jobs='two': must be an integer"),
        ("seeds=[]", "seeds=[]: must be a list of seeds in [0, 4294967295]"),
        ("seeds=[0,-1]", "seeds=[0, -1]: must be a list of seeds in [0, 4294967295]"),
        ("n_boot=0", "n_boot=0: must be at least 1"),
        ("report_only=maybe", "report_only='maybe': must be true or false"),
    ],
)
def test_a_mistaken_setting_is_refused_before_anything_is_opened_or_trained(tmp_path, override, message):
    from cricket_attn.settings import SettingError

    with pytest.raises(SettingError) as refused:
        run_ablation(ablation_config(tmp_path, override))
    assert str(refused.value) == message
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "out").exists()


@pytest.mark.e2e
def test_the_command_refuses_in_one_line_with_status_2(tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("cricket-attn-ablate") or str(Path(sys.executable).with_name("cricket-attn-ablate"))
    out = subprocess.run(
        [exe, "jobs=0", f"output_dir={tmp_path / 'out'}", f"paths.mlflow_uri=sqlite:///{tmp_path / 'mlflow.db'}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stderr.splitlines() == ["cricket-attn-ablate: jobs=0: must be at least 1"]
    assert not (tmp_path / "mlflow.db").exists()


def test_a_run_is_known_by_the_config_it_composes_to():
    """The same run whatever its overrides spell out, and another once conf/'s defaults differ: a record
    made under the old defaults (career rates, embeddings) is not taken for today's default."""
    default = settings_digest(())
    assert settings_digest(("data.history_balls=0",)) == default  # the default, spelt out
    assert settings_digest(("progress=none", "logger.run_name=x")) == default  # where it logs, not what it is
    assert settings_digest(("model.context=0",)) != default
    assert settings_digest(("data.records=null", "data.min_count=50")) != default
    with pytest.raises(ValueError, match=r"variant self_only: .*model.contex=0.* make no training config"):
        run_key(ablation_config(Path("/tmp"), "variants.self_only=['model.contex=0']"), SELF_ONLY)


def test_a_run_on_data_an_older_ingest_built_is_not_one_of_todays(monkeypatch):
    """The same overrides after the deliveries table's schema or the teacher's features changed make
    another run: the record's runs on the old table are not reused (the phases' change of schema 7)."""
    today = settings_digest(())
    try:
        monkeypatch.setattr(deliveries, "SCHEMA_VERSION", deliveries.SCHEMA_VERSION - 1)
        settings_digest.cache_clear()
        older = settings_digest(())
        monkeypatch.setattr(trees, "TREES_VERSION", trees.TREES_VERSION - 1)
        settings_digest.cache_clear()
        assert len({today, older, settings_digest(())}) == 3
    finally:
        settings_digest.cache_clear()  # today's digests for the tests after this one
