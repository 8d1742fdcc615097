"""The Hydra training app composes the real config and runs end to end on real matches."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from cricket_attn.model import ConfigError
from cricket_attn.training.train import train
from tests.conftest import FIXTURES, tiny_train_config

pytestmark = pytest.mark.e2e  # the training entry point, its runs and its config as a run composes it


def test_fit_refit_and_test_on_real_matches(tracked_run):
    results = tracked_run["results"]
    assert 1.0 < results["test/log_loss"] < 3.0 and 0.0 <= results["test/ece"] <= 1.0
    assert results["selection/epochs"] in (1, 2)
    assert "refit" in results["checkpoint"] and (tracked_run["folder"] / "run" / "checkpoints").is_dir()
    # The LightningModule's own test step (cross-entropy) and the report's scikit-learn log loss agree,
    # on one model (the final checkpoint's first member: the LightningModule holds one model).
    import hydra
    import pytorch_lightning as pl

    from cricket_attn.inference.probabilities import score_deliveries
    from cricket_attn.metrics import score
    from cricket_attn.training.lit_module import load_checkpoint

    module, _ = load_checkpoint(results["checkpoint"])
    dm = hydra.utils.instantiate(tracked_run["cfg"].data, refit=True)
    tested = pl.Trainer(logger=False, enable_progress_bar=False).test(module, dm, verbose=False)[0]
    test = dm.split.split(dm.tables.deliveries)["test"]
    assert abs(tested["test/loss"] - score(score_deliveries(module.model, dm.encoder, test))["log_loss"]) < 1e-5


def test_final_model_carries_the_calibration_fitted_on_validation(tracked_run):
    from mlflow import MlflowClient

    from cricket_attn.training.lit_module import load_checkpoint

    results = tracked_run["results"]
    assert Path(results["checkpoint"]).name == "calibrated.ckpt"
    module, _ = load_checkpoint(results["checkpoint"])
    assert module.model.cfg.temperature == pytest.approx(results["calibration/temperature"])
    assert module.model.cfg.wicket_offset == pytest.approx(results["calibration/wicket_offset"])
    assert 0.5 <= results["calibration/temperature"] <= 2.0 and results["calibration/temperature"] != 1.0
    assert results["calibration/wicket_offset"] == 0.0  # conf's calibration: the temperature alone
    assert results["calibration/val_log_loss_after"] <= results["calibration/val_log_loss_before"]
    logged = MlflowClient(tracked_run["uri"]).get_run(tracked_run["run_id"]).data.metrics
    assert logged["calibration/temperature"] == pytest.approx(results["calibration/temperature"])


def test_ensemble_refits_seeded_members_and_tests_their_mean(tmp_path):
    import hydra
    import numpy as np

    from cricket_attn.inference.checkpoints import load_model
    from cricket_attn.inference.probabilities import score_deliveries
    from cricket_attn.inference.serving import from_checkpoint
    from cricket_attn.metrics import PROB_COLUMNS, score
    from cricket_attn.model import Ensemble
    from cricket_attn.training.lit_module import load_checkpoint

    cfg = tiny_train_config(tmp_path, "ensemble=2", "~logger", "calibrate_wickets=true")
    results = train(cfg)
    checkpoints = tmp_path / "run" / "checkpoints"
    assert Path(results["checkpoint"]) == checkpoints / "refit" / "calibrated.ckpt"
    model, _ = load_model(results["checkpoint"])
    assert isinstance(model, Ensemble) and len(model.members) == 2
    assert all(m.cfg.temperature == pytest.approx(results["calibration/temperature"]) for m in model.members)
    assert results["calibration/wicket_offset"] != 0.0  # with calibrate_wickets, fitted beside the temperature
    assert all(m.cfg.wicket_offset == pytest.approx(results["calibration/wicket_offset"]) for m in model.members)
    # Each member is its own refit, from its own seed, for the epoch count chosen on validation.
    refits = [load_checkpoint(checkpoints / name / "last.ckpt") for name in ("refit", "refit2")]
    assert [ckpt["epoch"] + 1 for _, ckpt in refits] == [results["selection/epochs"]] * 2
    a, b = (dict(m.model.named_parameters())["head.weight"] for m, _ in refits)
    assert not torch.equal(a, b)
    # The test report scores the mean of the members' distributions.
    trained = from_checkpoint(results["checkpoint"])
    test = hydra.utils.instantiate(cfg.data, refit=True)
    test.prepare_data()
    test.setup("test")
    deliveries = test.split.split(test.tables.deliveries)["test"]
    trained.encoder.attach_known(test.tables.deliveries)  # the records the run read, as of each ball's day
    each = [score_deliveries(m, trained.encoder, deliveries)[list(PROB_COLUMNS)].to_numpy() for m in model.members]
    scored = trained.score(deliveries)
    assert np.abs(scored[list(PROB_COLUMNS)].to_numpy() - np.mean(each, axis=0)).max() < 1e-6
    assert score(scored)["log_loss"] == pytest.approx(results["test/log_loss"], abs=1e-9)


def test_a_refit_from_the_selected_model_continues_it_with_its_own_encoder(tmp_path):
    """refit_from=selected: each member starts from the selected model's weights (not a fresh model) and
    trains refit_epochs more epochs on the training and validation seasons, reading its features through the
    selection's encoder (fitted to 2023) as the selected model learnt them; the test report scores it."""
    import hydra

    from cricket_attn.data.deliveries import load_tables
    from cricket_attn.inference.recent import balls_since
    from cricket_attn.inference.serving import from_checkpoint
    from cricket_attn.training.lit_module import load_checkpoint

    overrides = ("ensemble=2", "~logger", "refit_from=selected", "refit_epochs=1", "trainer.max_epochs=3")
    results = train(tiny_train_config(tmp_path, *overrides))
    checkpoints = tmp_path / "run" / "checkpoints"
    selected, _ = load_checkpoint(next(checkpoints.glob("best-*.ckpt")))
    members = [load_checkpoint(checkpoints / name / "last.ckpt") for name in ("refit", "refit2")]
    assert [ckpt["epoch"] + 1 for _, ckpt in members] == [1, 1]
    flat = lambda m: torch.cat([p.detach().flatten() for p in m.model.parameters()])
    for member, _ in members:  # one epoch on from the selected weights: moved, and still theirs (a fresh start: r ~ 0)
        assert not torch.equal(flat(member), flat(selected))
        assert torch.corrcoef(torch.stack([flat(member), flat(selected)]))[0, 1] > 0.9
    continued = from_checkpoint(results["checkpoint"])
    # The selection's encoder (fitted to 2023), the model trained through 2024: what the scorebook, the
    # valuation and the balls after its training (below) take as its own seasons.
    assert (continued.encoder.last_season, continued.encoder.trained_until) == (2023, 2024)
    data = hydra.utils.instantiate(tiny_train_config(tmp_path, *overrides).data)
    deliveries = load_tables(data.sources, data.phases, data.data_dir).deliveries
    _, dates = balls_since(continued.model, continued.encoder, deliveries)
    after = deliveries[deliveries["match_id"].astype(str).isin(dates.index)]
    assert len(dates) and set(after["season"]) == set(deliveries.loc[deliveries["season"] > 2024, "season"])
    assert math.isfinite(results["test/log_loss"]) and 1.0 < results["test/log_loss"] < 2.5
    # A run started from it (make leagues' fine-tune): its refit members start from these, through their encoder
    # (a refit encoder fitted afresh to 2024 would not read their features as they learnt them: refused).
    still = ("~logger", f"data.data_dir={tmp_path / 'data'}", "optim.lr=1e-12", "optim.weight_decay=0")
    tuned = train(tiny_train_config(tmp_path / "tuned", *still, f"init_from={tmp_path / 'run'}", "ensemble=2"))
    final = from_checkpoint(tuned["checkpoint"])
    assert (final.encoder.last_season, final.encoder.trained_until) == (2023, 2024)
    for tuned_member, (member, _) in zip(final.model.members, members, strict=True):
        assert torch.allclose(torch.cat([p.flatten() for p in tuned_member.parameters()]), flat(member), atol=1e-6)


def test_console_script_finds_conf_from_any_folder(tmp_path):
    import shutil
    import subprocess

    exe = shutil.which("cricket-attn-train") or str(Path(sys.executable).with_name("cricket-attn-train"))
    out = subprocess.run([exe, "--cfg", "job", "model.d_model=32"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "d_model: 32" in out.stdout and "_target_: cricket_attn.data.datamodule.CricketDataModule" in out.stdout
    bad = subprocess.run([exe, "model.d_modle=32"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode != 0 and "d_modle" in bad.stderr
    # A tracking store that cannot be reached: one line naming it, exit status 2, before any data is read.
    gone = subprocess.run(
        [exe, "paths.mlflow_uri=http://127.0.0.1:9", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert gone.returncode == 2
    assert gone.stderr.strip().splitlines()[-1].startswith("cricket-attn-train: MLflow tracking URI http://127.0.0.1:9")


def test_the_trainer_and_its_callbacks_build_from_conf(tmp_path):
    """conf/trainer and conf/callbacks made into the objects training uses; the GPU trainers (no GPU here) as
    far as a machine without one allows: every setting one the Trainer takes."""
    import inspect

    import hydra
    import pytorch_lightning as pl

    cfg = tiny_train_config(tmp_path)
    callbacks = [hydra.utils.instantiate(c) for c in cfg.callbacks.values() if c]
    trainer = hydra.utils.instantiate(cfg.trainer, callbacks=callbacks, logger=False)
    assert isinstance(trainer.accelerator, pl.accelerators.CPUAccelerator) and trainer.max_epochs == 2
    assert trainer.gradient_clip_val == 1.0 and trainer.early_stopping_callback is None
    assert trainer.checkpoint_callback.dirpath == str(tmp_path / "run" / "checkpoints")
    assert trainer.checkpoint_callback.monitor is None  # the schedule's last epoch is kept
    for choice in ("early_stopping", "[ema,early_stopping]"):  # early stopping, alone or beside the average
        chosen = tiny_train_config(tmp_path, f"callbacks={choice}").callbacks
        made = {name: hydra.utils.instantiate(c) for name, c in chosen.items() if c}
        assert made["early_stopping"].monitor == made["model_checkpoint"].monitor == "val/loss"
        assert ("weight_averaging" in made) == ("ema" in choice)
    for name, expected in (
        ("gpu", {"accelerator": "gpu", "precision": "bf16-mixed", "devices": 1}),
        ("ddp", {"strategy": "ddp", "use_distributed_sampler": False, "devices": "auto"}),
    ):
        made = hydra.utils.instantiate(tiny_train_config(tmp_path, f"trainer={name}").trainer, _partial_=True)
        assert made.func is pl.Trainer and expected.items() <= made.keywords.items()
        inspect.signature(pl.Trainer).bind(**made.keywords)  # a key the Trainer does not take raises TypeError


def test_a_fixed_schedule_keeps_its_last_epoch(tmp_path, caplog):
    """Without early stopping and with no score to keep the best by (the default), the schedule's last epoch is
    the selected model and its epoch count the refit's: no epoch chosen on the validation season."""
    import logging

    caplog.set_level(logging.INFO, logger="cricket_attn")
    results = train(tiny_train_config(tmp_path, "~logger", "trainer.max_epochs=3"))
    assert results["selection/epochs"] == 3 and results["selection/best_val_loss"] is not None
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("cricket_attn")]
    assert "selection: training on 2008-2023, for 3 epochs, the last kept (validated on 2024)" in lines
    done = next(line for line in lines if line.startswith("selection: done in "))
    assert f"; kept the last, epoch 3, val loss {results['selection/best_val_loss']:.4f}" in done
    assert any(line.startswith("refit 1/1: training on seasons up to 2023 and 2024 for 3 epochs") for line in lines)


def test_early_stopping_chooses_the_epoch_count_on_validation(tmp_path, caplog):
    """`callbacks=early_stopping`: the selection's best epoch on the validation season is the selected model and
    the refit's epoch count."""
    import logging

    import torch

    caplog.set_level(logging.INFO, logger="cricket_attn")
    results = train(tiny_train_config(tmp_path, "~logger", "callbacks=early_stopping", "trainer.max_epochs=3"))
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("cricket_attn")]
    assert "selection: training on 2008-2023, choosing the epoch count on 2024 (early stopping)" in lines
    (best,) = (tmp_path / "run" / "checkpoints").glob("best-*.ckpt")
    chosen = torch.load(best, map_location="cpu", weights_only=True)["epoch"] + 1
    assert results["selection/epochs"] == chosen and results["selection/best_val_loss"] is not None
    refit = f"refit 1/1: training on seasons up to 2023 and 2024 for {chosen} epochs"
    assert any(line.startswith(refit) for line in lines)


def test_training_says_each_stage_and_each_epoch_in_one_line(tmp_path, caplog):
    import logging

    from mlflow import MlflowClient

    caplog.set_level(logging.INFO, logger="cricket_attn")
    results = train(tiny_train_config(tmp_path, "ensemble=2", "progress=lines"))
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("cricket_attn")]
    epochs = results["selection/epochs"]
    expected = [
        "data: reading the deliveries, fitting the encoder and the teacher on seasons up to 2023",
        "teacher: 3 folds of gradient-boosted trees on 2,636 deliveries of seasons 2008-2023",
        "teacher fold 1/3: ",
        "teacher fold 3/3: ",
        "selection: training on 2008-2023, for 2 epochs, the last kept (validated on 2024)",
        "selection epoch 1/2, train loss ",
        "selection epoch 2/2, train loss ",
        "selection: done in ",
        "calibration: temperature ",
        f"refit 1/2: training on seasons up to 2023 and 2024 for {epochs} epochs, seed 0",
        "teacher: 3 folds of gradient-boosted trees on ",  # the refit's own, 2008-2024
        "teacher fold 3/3: ",
        f"refit 1/2 epoch {epochs}/{epochs}, ",
        "refit 1/2: done in ",
        f"refit 2/2: training on seasons up to 2023 and 2024 for {epochs} epochs, seed 1",
        f"refit 2/2 epoch {epochs}/{epochs}, ",
        "test report: scoring 1,200 deliveries of seasons 2025-2026",
        "test report: done in ",
    ]
    at = 0
    for start in expected:  # in this order, each line once at least
        found = next((i for i in range(at, len(lines)) if lines[i].startswith(start)), None)
        assert found is not None, f"no line starting {start!r} after {lines[at - 1] if at else 'the start'!r}"
        at = found + 1
    # Each stage's teacher is fitted once, and the refit's data set is built once for both members.
    assert sum(line.startswith("teacher fold ") for line in lines) == 6
    assert not any(line.startswith("teacher: read from the cache") for line in lines)
    assert next(line for line in lines if "of seasons 2008-2024" in line).startswith("teacher: 3 folds")
    # The numbers in the lines are the logged ones.
    history = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").get_metric_history(
        results["mlflow_run_id"], "val/loss"
    )
    first = next(line for line in lines if line.startswith("selection epoch 1/2"))
    assert f"val loss {sorted(history, key=lambda m: m.step)[0].value:.4f} (best so far)" in first
    done = next(line for line in lines if line.startswith("test report: done"))
    assert f"log loss {results['test/log_loss']:.4f}, ECE {results['test/ece']:.4f}" in done


def test_on_a_terminal_each_epoch_gets_a_bar_named_after_its_stage(tmp_path, capsys):
    train(
        tiny_train_config(
            tmp_path,
            "refit=false",
            "calibrate=false",
            "trainer.max_epochs=2",
            "progress=bar",
            "~logger",
            "data.teacher=null",
        )
    )
    shown = capsys.readouterr()
    assert "selection epoch 1/2" in shown.out + shown.err and "selection epoch 2/2" in shown.out + shown.err


# Settings refused on the config alone (cricket_attn.settings, ModelConfig): before the data is read or the
# tracking store opened, so a mistake costs the second it takes to compose the config.
@pytest.mark.parametrize(
    "override, message",
    [
        ("trainer.max_epochs=abc", "trainer.max_epochs='abc': must be an integer"),
        ("trainer.max_epochs=-3", "trainer.max_epochs=-3: must be at least 1"),
        ("model.d_model=-16", "model.d_model=-16: must be at least 1"),
        ("data.batch_size=0", "data.batch_size=0: must be at least 1"),
        ("data.batch_size=-4", "data.batch_size=-4: must be at least 1"),
        ("optim.lr=-1", "optim.lr=-1: must be positive"),
        ("optim.lr=fast", "optim.lr='fast': must be a number"),
        ("model.n_heads=0", "model.n_heads=0: must be at least 1"),
        ("model.n_heads=3", "model.d_model=8: must be divisible by model.n_heads=3"),
        ("ensemble=0", "ensemble=0: must be at least 1"),
        ("progress=loud", "progress='loud': must be one of auto, bar, lines, none"),
        ("data.teacher.weight=1.5", "data.teacher.weight=1.5: must be in [0, 1]"),
        ("data.split.validation=[2025]", "data.split: seasons must run train (<= 2023) < validation [2025] < test"),
    ],
)
def test_a_mistaken_setting_fails_before_anything_is_read_or_opened(tmp_path, override, message):
    with pytest.raises(ConfigError) as refused:
        train(tiny_train_config(tmp_path, override, new_store=True))
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    assert not (tmp_path / "data").exists()  # the data (cached there on first read) was not read
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "run").exists()


def test_the_command_refuses_in_one_line_with_status_2(tmp_path, capsys, monkeypatch):
    import cricket_attn.training.train as train_module
    from cricket_attn.commands.train import main
    from cricket_attn.tracking import ResumeError, TrackingError

    with pytest.raises(SystemExit) as stop:
        main(tiny_train_config(tmp_path, "data.batch_size=0"))
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines() == ["cricket-attn-train: data.batch_size=0: must be at least 1"]
    # Each kind of refusal the protocol raises (a damaged run file, a store, a missing file) is one line too.
    for error in (ResumeError("run/last.ckpt is damaged"), TrackingError("no store"), FileNotFoundError("no.zip")):

        def refuse(cfg, error=error):
            raise error

        monkeypatch.setattr(train_module, "train", refuse)
        with pytest.raises(SystemExit) as stop:
            main(tiny_train_config(tmp_path, new_store=True))
        assert stop.value.code == 2 and capsys.readouterr().err.splitlines() == [f"cricket-attn-train: {error}"]


# Settings refused against the data: read from its cache, before the MLflow run is opened.
@pytest.mark.parametrize(
    "overrides, message",
    [
        (["model.max_len=10"], "model.max_len=10: must be at least 133 (the data has 133 deliveries)"),
        (
            ["data.split.test=[2030]"],
            "data.split.test=[2030]: no deliveries in the test seasons (the data has seasons 2008-2026)",
        ),
        (
            ["data.split.train_until=2019", "data.split.validation=[2021]"],
            "data.split.validation=[2021]: no deliveries in the validation seasons",
        ),
        (["data.sources=[/no/such/matches.json]"], "data.sources: /no/such/matches.json: no such file or folder"),
        (
            ["data.train_competitions=[SA20]"],
            "data.train_competitions: 'SA20' has no deliveries in the training seasons (the most frequent "
            "there: Indian Premier League)",
        ),
        (  # ema's composition of the default callbacks, merged after early stopping's, kept the last epoch
            ["callbacks=[early_stopping,ema]"],
            "callbacks.model_checkpoint.monitor=None: must be early stopping's 'val/loss', or the selection stops",
        ),
        (  # the T20 Blast's one fixture match is of 2023: training, and nothing to choose its epochs on
            [f"data.sources=[{FIXTURES},{FIXTURES.parent / 'cricsheet_t20'}]", "data.train_competitions=[T20 Blast]"],
            "data.train_competitions: 'T20 Blast' has no deliveries in the validation seasons (the most frequent "
            "there: Indian Premier League",
        ),
    ],
)
def test_config_errors_fail_before_any_work_and_leave_no_run(tmp_path, overrides, message):
    import re

    from mlflow import MlflowClient

    with pytest.raises(ConfigError, match=re.escape(message)):
        train(tiny_train_config(tmp_path, *overrides))
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert not client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert not (tmp_path / "run").exists()


def test_a_source_with_nothing_to_train_on_is_one_error_before_any_work(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=f"data.sources: nothing to train on in {tmp_path / 'empty'}: no match file"):
        train(tiny_train_config(tmp_path, f"data.sources=[{tmp_path / 'empty'}]"))


def test_a_model_reading_context_trains_and_serves(tmp_path):
    """data.history_balls, data.first_innings and data.records: the run trains and tests; the checkpoint,
    served on the test matches with the histories and records of every match known (as cricket-attn-evaluate
    attaches them), gives the report's numbers."""
    import hydra

    from cricket_attn.inference.serving import from_checkpoint
    from cricket_attn.metrics import score

    reading = ("data.history_balls=8", "data.first_innings=true", "data.records={half_life_days: 200}")
    quick = ("~logger", "refit=false", "calibrate=false")
    cfg = tiny_train_config(tmp_path, *reading, *quick)
    results = train(cfg)
    trained = from_checkpoint(results["checkpoint"])
    assert trained.encoder.history_balls == 8 and trained.model.cfg.history_balls == 8
    assert trained.encoder.first_innings and trained.model.cfg.first_innings
    assert trained.encoder.records["half_life_days"] == 200 and not trained.encoder.rates
    dm = hydra.utils.instantiate(cfg.data)
    dm.setup("test")
    trained.encoder.attach_known(dm.tables.deliveries)
    test = dm.split.split(dm.tables.deliveries)["test"]
    assert abs(score(trained.score(test))["log_loss"] - results["test/log_loss"]) < 1e-6
    # cricket-attn-predict and cricket-attn-attention read the histories and records from --history (the
    # archive joined to the matches given): the same probabilities, and the readers' report.
    import numpy as np
    import pandas as pd

    from cricket_attn.commands import predict
    from cricket_attn.commands.attention import main as attention
    from cricket_attn.metrics import PROB_COLUMNS
    from tests.conftest import FIXTURES

    predicted = tmp_path / "predicted.parquet"
    predict.run(
        predict.parse_args(
            ["--model", results["checkpoint"], "--out", str(predicted), "--history", str(FIXTURES), str(FIXTURES)]
        )
    )
    keys = ["match_id", "innings", "delivery_index"]
    both = trained.score(test).merge(pd.read_parquet(predicted), on=keys, suffixes=("", "_cli"))
    assert len(both) == len(test[~test["is_super_over"].astype(bool)])
    cols = list(PROB_COLUMNS)
    assert np.abs(both[cols].to_numpy() - both[[c + "_cli" for c in cols]].to_numpy()).max() < 1e-6

    out = tmp_path / "attention"
    args = ["--model", results["checkpoint"], "--out", str(out), "--report", "--history", str(FIXTURES)]
    assert attention([*args, str(FIXTURES)]) == 0
    readers = (out / "histories.md").read_text()
    assert "| batter history | competition | Indian Premier League |" in readers and "| bowler history |" in readers
    # A killed run resumes: its encoder, restored from the checkpoint, reads the histories and records again.
    again = train(
        tiny_train_config(
            tmp_path,
            *reading,
            *quick,
            "trainer.max_epochs=3",
            f"resume={tmp_path / 'run'}",
            f"paths.output_dir={tmp_path / 'resumed'}",
        )
    )
    assert math.isfinite(again["test/log_loss"])


def test_a_run_starts_from_an_earlier_runs_weights(tracked_run, tmp_path):
    """init_from: the selection stage starts from the earlier run's selected model and each refit member
    from its member (with a learning rate too small to move them, they end where they started, while a
    fresh start does not); a run whose encoder differs, or a folder with no run, is refused."""
    from cricket_attn.inference.checkpoints import load_model
    from cricket_attn.tracking import read_run_file
    from cricket_attn.training.lit_module import load_checkpoint

    def same(a, b) -> bool:
        return all(torch.allclose(p, q, atol=1e-6) for p, q in zip(a.parameters(), b.parameters(), strict=True))

    earlier = read_run_file(tracked_run["folder"] / "run")
    still = ["~logger", f"data.data_dir={tracked_run['folder'] / 'data'}", "optim.lr=1e-12", "optim.weight_decay=0"]
    start = [*still, f"init_from={tracked_run['folder'] / 'run'}"]
    results = train(
        tiny_train_config(tmp_path, *start, "ensemble=2", "data.train_competitions=[Indian Premier League]")
    )
    selected = load_checkpoint(read_run_file(tmp_path / "run")["selection_checkpoint"])[0].model
    assert same(selected, load_checkpoint(earlier["selection_checkpoint"])[0].model)
    final, _ = load_model(results["checkpoint"])
    (source,) = earlier["refit_members"]  # the tracked run's one member (TINY_TRAINING): each member starts there
    assert len(final.members) == 2 and all(same(m, load_checkpoint(source)[0].model) for m in final.members)
    fresh = train(tiny_train_config(tmp_path / "fresh", *still, "refit=false"))
    assert not same(load_model(fresh["checkpoint"])[0], load_checkpoint(earlier["selection_checkpoint"])[0].model)
    with pytest.raises(ConfigError, match=f"init_from={tmp_path}: no mlflow_run.json there"):
        train(tiny_train_config(tmp_path / "none", "~logger", f"init_from={tmp_path}"))
    # A selection-only run has no refit members: a refit from it is refused before any work, not after
    # its selection stage.
    with pytest.raises(ConfigError, match=f"init_from={tmp_path / 'fresh' / 'run'}: that run has no refit member"):
        train(tiny_train_config(tmp_path / "late", *still, f"init_from={tmp_path / 'fresh' / 'run'}"))
    assert not (tmp_path / "late" / "run").exists()
    # Refused before any data is read or any MLflow run started (these came after 21-25 s on the IPL, leaving
    # a FAILED run, or as a traceback): other data settings, another model shape, a checkpoint missing or cut
    # short.
    with pytest.raises(ConfigError, match="that run has data.min_count=None, this one 6; a run starts only"):
        train(tiny_train_config(tmp_path / "other", *start, "data.min_count=6"))
    with pytest.raises(ConfigError, match="that run's model has model.d_model=8, this one 16; a run starts only"):
        train(tiny_train_config(tmp_path / "shape", *start, "model.d_model=16"))
    copy = tmp_path / "copy"
    shutil.copytree(tracked_run["folder"] / "run", copy)
    state = read_run_file(copy)
    for field in ("selection_checkpoint", "refit_members"):  # the copy's own files
        value = state[field]
        state[field] = (
            [str(copy / Path(v).relative_to(tracked_run["folder"] / "run")) for v in value]
            if isinstance(value, list)
            else str(copy / Path(value).relative_to(tracked_run["folder"] / "run"))
        )
    # A run file that does not say its data settings: the encoder is still compared when the weights load.
    (copy / "mlflow_run.json").write_text(json.dumps({k: v for k, v in state.items() if k != "data"}))
    with pytest.raises(ConfigError, match="was fitted with another encoder"):
        train(tiny_train_config(tmp_path / "unsaid", *still, f"init_from={copy}", "data.min_count=6"))
    (copy / "mlflow_run.json").write_text(json.dumps(state))
    cut = Path(state["selection_checkpoint"])
    old = torch.load(cut, map_location="cpu", weights_only=True)
    torch.save({k: v for k, v in old.items() if k != "cricket_attn_format"}, cut)  # before checkpoints had a format
    with pytest.raises(ConfigError, match=rf"init_from={copy}: {cut}: a checkpoint of no format"):
        train(tiny_train_config(tmp_path / "unversioned", *still, f"init_from={copy}"))
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    with pytest.raises(ConfigError, match=rf"init_from={copy}: its checkpoint {cut} is damaged \("):
        train(tiny_train_config(tmp_path / "cut", *still, f"init_from={copy}"))
    cut.unlink()
    with pytest.raises(ConfigError, match=rf"init_from={copy}: its checkpoint {cut} is missing$"):
        train(tiny_train_config(tmp_path / "gone", *still, f"init_from={copy}"))
    for folder in ("other", "shape", "unversioned", "cut", "gone"):
        assert not (tmp_path / folder / "run").exists()


def test_weight_averaging_validates_and_keeps_the_average(tmp_path):
    """callbacks.weight_averaging: the checkpoint's weights are the moving average (the live ones beside
    them), and the run's test scores the average. A half-life of a millionth of an epoch is no averaging
    (the average is the live weights); one of a thousand epochs keeps the average near the first step's."""
    from cricket_attn.training.lit_module import load_checkpoint

    gaps = {}
    for half_life in ("1e-6", "1000"):
        overrides = ("callbacks=ema", f"callbacks.weight_averaging.half_life_epochs={half_life}", "refit=false")
        results = train(tiny_train_config(tmp_path / half_life, *overrides, "~logger"))
        _, ckpt = load_checkpoint(results["checkpoint"])  # the checkpoint the run tested
        live = ckpt["current_model_state"]
        assert set(live) == set(ckpt["state_dict"])
        gaps[half_life] = max((live[k].float() - v.float()).abs().max().item() for k, v in ckpt["state_dict"].items())
    assert gaps["1e-6"] < 1e-6 < 1e-3 < gaps["1000"]
    with pytest.raises(ConfigError, match=r"^callbacks.weight_averaging.half_life_epochs=0: must be positive"):
        train(tiny_train_config(tmp_path / "zero", "callbacks=ema", "callbacks.weight_averaging.half_life_epochs=0"))


class SigtermAt(pl.Callback):
    """Sends this process SIGTERM after the given optimiser step, as a scheduler or `kill` would."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


def test_a_run_stopped_by_sigterm_mid_fit_is_killed_and_stops_as_an_interrupt(tmp_path):
    """Lightning turns an interrupt during a fit into SystemExit(1); the run is still KILLED (not FAILED),
    and the stop leaves `train` as KeyboardInterrupt, so a sweep of runs stops instead of going on."""
    from mlflow.tracking import MlflowClient

    stop = "+callbacks.stop={_target_: tests.training.test_train.SigtermAt, step: 2}"
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        train(tiny_train_config(tmp_path, stop))
    assert signal.getsignal(signal.SIGTERM) is before
    run_id = json.loads((tmp_path / "run" / "mlflow_run.json").read_text())["run_id"]
    assert MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").get_run(run_id).info.status == "KILLED"


def test_the_command_stopped_says_in_one_line_how_the_run_continues(tmp_path, capsys, monkeypatch):
    """`cricket-attn-train` stopped by SIGTERM mid-fit (or Ctrl-C), tracked in MLflow or not: not a traceback (nor,
    untracked, Lightning's exit with status 0) but one line with the command that continues it, and exit status
    130; stopped before its run file is written, that there is nothing to resume."""
    import cricket_attn.training.train as train_module
    from cricket_attn.commands.train import main

    stop = "+callbacks.stop={_target_: tests.training.test_train.SigtermAt, step: 2}"
    with pytest.raises(SystemExit) as stopped:
        main(tiny_train_config(tmp_path, stop))
    folder = (tmp_path / "run").resolve()
    assert stopped.value.code == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"cricket-attn-train: stopped by SIGTERM; it continues with: cricket-attn-train resume={folder}"
    )
    # Untracked (no MLflow run to mark KILLED), Lightning alone would make SIGTERM a SystemExit with status 0.
    with pytest.raises(SystemExit) as stopped:
        main(tiny_train_config(tmp_path / "untracked", stop, "~logger"))
    folder = (tmp_path / "untracked" / "run").resolve()
    assert stopped.value.code == 130
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"cricket-attn-train: stopped by SIGTERM; it continues with: cricket-attn-train resume={folder}"
    )

    def interrupted(cfg):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "train", interrupted)
    with pytest.raises(SystemExit) as stopped:
        main(tiny_train_config(tmp_path / "new", new_store=True))
    assert stopped.value.code == 130
    assert capsys.readouterr().err.splitlines() == [
        "cricket-attn-train: interrupted before the run began; nothing to resume"
    ]
