"""Training's protocol: fit the transformer, test it and track it in MLflow (`cricket-attn-train`:
cricket_attn/commands/train.py, the Hydra command over conf/).

Protocol: fit on the training seasons for a fixed schedule, validated on the validation season (with
`callbacks=early_stopping`, that season chooses the number of epochs); with `refit=true`, train a fresh model
on training + validation seasons for as many epochs (with `ensemble=N`, N of them from successive seeds,
their probabilities averaged); then score the test seasons, which nothing before has touched.

Each run is one MLflow run: the resolved config (artifact and params), the data of each split (as
dataset inputs), per-epoch losses (the refit stage's prefixed `refit-`), CPU and memory use, the test
report (metrics, plots, scored deliveries), the checkpoint path and the model. `resume=<output folder>`
continues a killed run from its last checkpoint, in the same MLflow run. Each stage says when it starts
and ends, and each epoch gets a line (or, on a terminal, a bar): `progress` in conf/.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import hydra
import pytorch_lightning as pl
import torch
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict

from cricket_attn import dashboard, progress, tracking
from cricket_attn.data.datamodule import CricketDataModule, encoder_settings
from cricket_attn.data.splits import season_range
from cricket_attn.inference.attention_pictures import log_attention
from cricket_attn.inference.checkpoints import load_model, save_final
from cricket_attn.inference.probabilities import score_deliveries
from cricket_attn.metrics import PROB_COLUMNS, calibrated, fit_calibration, probabilities, score
from cricket_attn.model import ConfigError, CricketTransformer, Ensemble
from cricket_attn.training.lit_module import BallOutcomeModule, load_checkpoint, progress_callbacks
from cricket_attn.training.preflight import check_data_fits_model, preflight
from cricket_attn.training.restart import (
    finished_as,
    load_start,
    resume_config,
    resume_from,
    selection_done,
    start_from,
)

log = logging.getLogger(__name__)
# Lightning advertises a cloud logger at every fit; this run is tracked in MLflow already.
logging.getLogger("pytorch_lightning.utilities.rank_zero").addFilter(lambda r: "litlogger" not in r.getMessage())


@dataclass
class Run:
    """Where this run writes: its output folder, and its MLflow run (None with logger=null)."""

    cfg: DictConfig
    folder: Path
    state: dict = field(default_factory=dict)  # what a resume needs: MLflow run id, chosen epochs

    @property
    def tracked(self) -> bool:
        return "run_id" in self.state

    @property
    def uri(self) -> str:
        return self.state["tracking_uri"]

    @property
    def run_id(self) -> str:
        return self.state["run_id"]

    def save(self) -> None:
        tracking.write_run_file(self.folder, self.state)

    def logger(self, prefix: str = ""):
        if not self.tracked:
            return False
        # The store the run was opened in, whatever the config says now (a resume need not repeat it).
        return hydra.utils.instantiate(self.cfg.logger, run_id=self.run_id, prefix=prefix, tracking_uri=self.uri)


CONTINUED = " (refit continued)"  # a selection-only run's name once `resume=... refit=true` finishes it


def open_run(cfg: DictConfig) -> Run:
    """The run's folder and MLflow run: new, or the earlier one named by `resume` (whose tracking
    store is checked first, so a bad URI fails in seconds)."""
    if cfg.resume:
        folder = Path(cfg.resume).resolve()
        state = tracking.read_run_file(folder)
        with open_dict(cfg):
            cfg.paths.output_dir = str(folder)  # checkpoints continue where they were
        run = Run(cfg, folder, state)
        if run.tracked:
            tracking.check_tracking_uri(run.uri)
            client = tracking.MlflowClient(run.uri)
            client.update_run(run.run_id, status="RUNNING")
            if cfg.refit and client.get_run(run.run_id).data.params.get("refit") == "False":
                log.info("resume: the run chose its epochs with refit=false; it continues to its refit")
                client.set_tag(run.run_id, "refit_continued", "true")  # its params say refit=False
                name = client.get_run(run.run_id).info.run_name or ""
                if not name.endswith(CONTINUED):  # the dashboard's name says so too
                    client.set_tag(run.run_id, "mlflow.runName", name + CONTINUED)
        return run
    folder = Path(cfg.paths.output_dir)
    # What fitted its encoder, for a later run's init_from to compare before it reads any data.
    run = Run(cfg, folder, {"data": encoder_settings(OmegaConf.to_container(cfg.data, resolve=True))})
    if cfg.get("logger"):
        uri = cfg.logger.tracking_uri  # checked by `preflight`
        tags, overrides = {"model_family": "transformer", "output_dir": str(folder)}, ""
        if HydraConfig.initialized():
            hc = HydraConfig.get()
            overrides = hc.job.override_dirname
            if hc.mode == hydra.types.RunMode.MULTIRUN:
                tags.update(sweep=str(hc.sweep.dir), sweep_job=str(hc.job.num))
        # One clock for the name and the start: the baselines paired with this run take their names' time
        # from its start, and a minute turning between the two would split the comparison in two.
        started = datetime.now()
        name = cfg.logger.get("run_name") or tracking.run_name("transformer", overrides, started)
        tags["comparison"] = name  # the baselines paired with this run carry the same tag
        tags.update({k: str(v) for k, v in (cfg.logger.get("tags") or {}).items()})
        run.state |= {
            "tracking_uri": uri,
            "run_id": tracking.start_run(uri, cfg.logger.experiment_name, name, tags, started=started),
        }
    run.save()
    return run


def fit_stage(
    cfg: DictConfig,
    dm: CricketDataModule,
    callbacks: dict,
    logger,
    stage: str,
    max_epochs: int | None = None,
    ckpt_path: str | None = None,
    start: str | None = None,
) -> BallOutcomeModule:
    dm.prepare_data()
    dm.setup("fit")
    model = {**dm.encoder.model_dims(), **OmegaConf.to_container(cfg.model, resolve=True)}
    check_data_fits_model(dm.tables.deliveries, model)
    module = BallOutcomeModule(model, **OmegaConf.to_container(cfg.optim, resolve=True))
    if start:
        load_start(module, dm, start)
    if cfg.get("compile"):  # a run saved before the setting existed has none: not compiled
        module.compile_model()
    shown, bar = progress_callbacks(stage, cfg.progress)
    kwargs = {
        "callbacks": [c for c in callbacks.values() if c is not None] + shown,
        "logger": logger,
        "enable_progress_bar": bar,
        "enable_model_summary": stage == "selection",
    }  # the same model each stage
    if max_epochs is not None:
        kwargs["max_epochs"] = max_epochs
    trainer = hydra.utils.instantiate(cfg.trainer, **kwargs)
    trainer.fit(module, dm, ckpt_path=ckpt_path)
    return module


def whole_epochs(trainer: pl.Trainer) -> int:
    """The epochs a fit trained to their last batch (Lightning's epoch counter also counts one that `max_steps` or
    `max_time` cut part way through)."""
    return trainer.current_epoch - (0 if trainer.fit_loop.epoch_loop.batch_progress.is_last_batch else 1)


def run_protocol(cfg: DictConfig, run: Run) -> dict:
    if run.state.get("finished") == finished_as(cfg):  # resumed once done: nothing is trained or scored again
        log.info("resume: the run in %s finished already; its results stand", run.folder)
        return dict(run.state.get("results", {}))
    pl.seed_everything(cfg.seed, workers=True)
    callbacks = {name: hydra.utils.instantiate(c) if c else None for name, c in cfg.callbacks.items()}
    ckpt = callbacks["model_checkpoint"]
    dm = hydra.utils.instantiate(cfg.data)
    resuming = bool(cfg.resume)
    # A damaged checkpoint is found before the data is read.
    done = resuming and selection_done(run.state, cfg)
    selection_from = resume_from(ckpt) if resuming and not done else None
    split = cfg.data.split
    fit_seasons, val_seasons = f"up to {split.train_until}", "/".join(map(str, split.validation))
    if not done:  # a new run, or a resumed one not past its selection stage
        log.info(
            "data: reading the deliveries, fitting the encoder%s on seasons %s",
            " and the teacher" if cfg.data.get("teacher") else "",
            fit_seasons,
        )
        dm.prepare_data()
        dm.setup("fit")
        parts = dm.split.split(dm.tables.deliveries)
        if run.tracked and not resuming:
            named = {context: (season_range(d), d) for context, d in parts.items()}
            tracking.log_datasets(run.uri, run.run_id, named, ", ".join(dm.tables.sources), dm.tables.key)
        if ckpt.monitor is None:  # no epoch chosen: the schedule's last is kept
            how = f"for {cfg.trainer.max_epochs} epochs, the last kept (validated on {val_seasons})"
        else:
            stops = "early stopping" if callbacks.get("early_stopping") else f"the best of {cfg.trainer.max_epochs}"
            how = f"choosing the epoch count on {val_seasons} ({stops})"
        if run.state.pop("selection_ran_to", None) is not None:  # trained on: the earlier end no longer stands
            run.save()
        log.info("selection: training on %s, %s", season_range(parts["train"]), how)
        clock = progress.Stopwatch()
        module = fit_stage(
            cfg, dm, callbacks, run.logger(), "selection", ckpt_path=selection_from, start=start_from(cfg)
        )
        best_path = ckpt.best_model_path
        # Epochs to the best validation loss, as the checkpoint records them (not its file name).
        best = torch.load(best_path, map_location="cpu", weights_only=True)["epoch"] + 1 if best_path else None
        stopper = callbacks.get("early_stopping")
        # The selected model's validation loss: the best epoch's, or with no score to choose by, the last's.
        score = ckpt.best_model_score if ckpt.monitor else module.trainer.callback_metrics.get("val/loss")
        run.state.update(
            selection_epochs=best,
            selection_checkpoint=best_path,
            selection_best_val=float(score) if score is not None else None,
            selection_final=bool(stopper is not None and stopper.stopped_epoch > 0),
            selection_ran_to=whole_epochs(module.trainer),  # for `selection_done`
        )
        val = run.state["selection_best_val"]
        log.info(
            "selection: done in %s; %s %s, val loss %s",
            clock,
            "best epoch" if ckpt.monitor else "kept the last, epoch",
            best,
            "none" if val is None else f"{val:.4f}",
        )
        if cfg.calibrate and best_path:
            run.state["calibration"] = calibrate(dm, best_path, cfg.calibrate_wickets)
            c = run.state["calibration"]
            log.info(
                "calibration: temperature %.3f, wicket offset %+.3f fitted on %s (val log loss %.4f before, "
                "%.4f after)",
                c["temperature"],
                c["wicket_offset"],
                val_seasons,
                c["val_log_loss_before"],
                c["val_log_loss_after"],
            )
        run.save()
    best_epoch, best_path = run.state["selection_epochs"], run.state["selection_checkpoint"]
    results = {"selection/best_val_loss": run.state["selection_best_val"], "selection/epochs": best_epoch}
    results.update({f"calibration/{k}": v for k, v in run.state.get("calibration", {}).items()})
    if cfg.refit and best_epoch:
        # Second stage: the same recipe on training + validation seasons, for the chosen epoch count;
        # with ensemble=N, N such models from seeds seed, seed+1, ... whose probabilities are averaged.
        run.state["selection_final"] = True  # a resume from here on continues the refit
        members = run.state.setdefault("refit_members", [])  # final checkpoints of the members done
        run.save()
        # Fresh callbacks, as configured, except early stopping: the epoch count is now fixed.
        refit_callbacks = {
            name: c for name, c in cfg.callbacks.items() if c and name not in ("early_stopping", "model_checkpoint")
        }
        refit_dm = None  # one encoder and data set for every member: only the order of the batches is each's own
        continued = cfg.refit_from == "selected"
        epochs = cfg.refit_epochs if continued else best_epoch
        for k in range(len(members), cfg.ensemble):
            clock, stage = progress.Stopwatch(), f"refit {k + 1}/{cfg.ensemble}"
            log.info(
                "%s: training on seasons %s and %s for %d epochs, seed %d%s",
                stage,
                fit_seasons,
                val_seasons,
                epochs,
                cfg.seed + k,
                ", from the selected model" if continued else "",
            )
            pl.seed_everything(cfg.seed + k, workers=True)
            if refit_dm is None:
                refit_dm = hydra.utils.instantiate(cfg.data, refit=True)
                # A refit that starts from a model (the selected one, or with init_from the earlier run's member)
                # reads its features as that model learnt them, through its encoder: fitted to the validation
                # season where that run refitted afresh (then the same as this one would fit), to the season
                # before where it continued its selected model.
                origin = best_path if continued else start_from(cfg, 0)
                if origin:
                    refit_dm.load_state_dict(
                        torch.load(origin, map_location="cpu", weights_only=True)["CricketDataModule"]
                    )
            dm, refit_dm.seed = refit_dm, cfg.seed + k
            name = "refit" if k == 0 else f"refit{k + 1}"
            refit_dir = Path(ckpt.dirpath) / name
            refit_ckpt = hydra.utils.instantiate(
                cfg.callbacks.model_checkpoint, monitor=None, dirpath=str(refit_dir), filename=name + "-{epoch:02d}"
            )
            callbacks_k = {n: hydra.utils.instantiate(c) for n, c in refit_callbacks.items()}
            fit_stage(
                cfg,
                dm,
                {**callbacks_k, "model_checkpoint": refit_ckpt},
                run.logger(name),
                stage,
                max_epochs=epochs,
                ckpt_path=resume_from(refit_ckpt) if resuming else None,
                start=best_path if continued else start_from(cfg, k),
            )
            members.append(refit_ckpt.last_model_path or refit_ckpt.best_model_path)
            run.save()
            log.info("%s: done in %s", stage, clock)
        final = members
    else:
        final = [best_path] if best_path else []
    if dm.tables is None:  # a run resumed past its last fit: the data, with the encoder as the final model's
        dm = hydra.utils.instantiate(cfg.data, refit=bool(cfg.refit and best_epoch))
        if final:
            dm.load_state_dict(torch.load(final[0], map_location="cpu", weights_only=True)["CricketDataModule"])
        dm.setup("test")
    calibration = run.state.get("calibration")
    if len(final) > 1 or (final and calibration is not None):
        # One checkpoint: the final model(s), carrying the calibration fitted on validation.
        out = Path(final[0]).parent / ("calibrated.ckpt" if calibration is not None else "ensemble.ckpt")
        final = [str(save_final(final, calibration, out))]
    results["checkpoint"] = final[0] if final else None
    # The test scores the final weights (with refit=false the selected epoch's).
    model = load_model(results["checkpoint"])[0] if final else module.model
    report(cfg, run, dm, model, results)
    plain = {k: v.item() if hasattr(v, "item") else v for k, v in results.items()}
    run.state.update(finished=finished_as(cfg), results=plain)
    run.save()
    for key, value in results.items():
        print(f"{key}: {value:.6g}" if isinstance(value, float) else f"{key}: {value}")
    return results


def calibrate(dm: CricketDataModule, checkpoint: str, wickets: bool) -> dict:
    """The selected model's validation-season predictions fix a temperature and (with `wickets`) a wicket
    offset (`fit_calibration`), which the final model then uses. Returns them with the validation log loss
    before and after."""
    module = load_checkpoint(checkpoint)[0]
    scored = score_deliveries(module.model, dm.encoder, dm.validation_deliveries, dm.eval_batch_size)
    temperature, wicket_offset = fit_calibration(scored, wickets)
    after = scored.copy()
    after[list(PROB_COLUMNS)] = calibrated(probabilities(scored), temperature, wicket_offset)
    return {
        "temperature": temperature,
        "wicket_offset": wicket_offset,
        "val_log_loss_before": score(scored)["log_loss"],
        "val_log_loss_after": score(after)["log_loss"],
    }


def report(
    cfg: DictConfig, run: Run, dm: CricketDataModule, model: CricketTransformer | Ensemble, results: dict
) -> None:
    """The test: score every test delivery with the final model (cricket_attn.metrics, as
    `cricket-attn-evaluate` does); log the report, the checkpoint and the model."""
    test = dm.split.split(dm.tables.deliveries)["test"]
    clock = progress.Stopwatch()
    log.info(
        "test report: scoring %s deliveries of seasons %s with the final model (super overs are not modelled)",
        f"{int((~test['is_super_over'].astype(bool)).sum()):,}",
        season_range(test),
    )
    scored = score_deliveries(model, dm.encoder, test, dm.eval_batch_size, desc="scoring the test seasons")
    if not run.tracked:
        results.update({f"test/{k}": v for k, v in score(scored).items()})
        log.info("test report: done in %s; log loss %.4f", clock, results["test/log_loss"])
        return
    results.update({f"test/{k}": v for k, v in tracking.log_scored(run.uri, run.run_id, scored, "test").items()})
    log.info("test report: done in %s; log loss %.4f, ECE %.4f", clock, results["test/log_loss"], results["test/ece"])
    clock = progress.Stopwatch()
    heads = log_attention(run.uri, run.run_id, model, dm.encoder, test)
    log.info(
        "attention: head report over the test balls and pictures of a test match logged in %s; %s",
        clock,
        "; ".join(
            f"head {r['layer']}.{r['head']} follows {r['specialises_in']}"
            for r in heads.to_dict("records")
            if not r["specialises_in"].startswith("nothing")
        )
        or "every head is near uniform",
    )
    client = tracking.MlflowClient(run.uri)
    for key in ("selection/best_val_loss", "selection/epochs", *(k for k in results if k.startswith("calibration/"))):
        if results.get(key) is not None:
            client.log_metric(run.run_id, key, float(results[key]))
    if results.get("checkpoint"):
        client.set_tag(run.run_id, "checkpoint", str(Path(results["checkpoint"]).resolve()))
        if cfg.mlflow.log_model:
            from cricket_attn.inference.serving import log_model

            log.info("MLflow: logging the final model as the run's `model`")
            for model_id in tracking.drop_earlier_models(run.uri, run.run_id, "model"):  # on a resume
                log.info("MLflow: deleted the model %s an earlier attempt of this run logged", model_id)
            first = test["match_id"].iloc[0] if len(test) else None
            example = test[test["match_id"] == first] if first is not None else dm.tables.deliveries.head(50)
            example_scored = score_deliveries(model, dm.encoder, example, dm.eval_batch_size)
            log_model(run.run_id, results["checkpoint"], example, example_scored, cfg.mlflow.registered_model_name)


def train(cfg: DictConfig) -> dict:
    """Fit, optionally refit, test, log. Returns the results; the MLflow run ends as `tracking.ending` says, and a
    stop, tracked or not, leaves as KeyboardInterrupt (`tracking.stopping`)."""
    preflight(cfg)
    run = open_run(cfg)
    if not run.tracked:
        with tracking.stopping():
            return run_protocol(cfg, run)
    tracking.log_config(run.uri, run.run_id, cfg)
    with tracking.ending(run.uri, run.run_id), tracking.system_metrics(run.uri, run.run_id, resume=bool(cfg.resume)):
        results = run_protocol(cfg, run)
    results["mlflow_run_id"] = run.run_id
    link = dashboard.dashboard_url(run.uri, cfg.logger.experiment_name, run.run_id)
    print(f"MLflow run: {link} (after `make dashboard`)")
    return results


def train_job(cfg: DictConfig) -> float:
    """A training run as `cricket-attn-train` starts it, inside a Hydra job (the command, and each ablation job
    through Hydra's launcher): a resumed run takes its own config with what this job's overrides change; a
    setting refused is one line and exit status 2. Returns the selection stage's validation log loss, after the
    calibration the final model gets (`calibrate=true`), else its best: what a sweeper (Optuna) minimises.
    Never the test's, so a search cannot choose its settings on the test seasons."""
    try:
        tracking.artifact_bars(cfg.progress == "bar" or (cfg.progress == "auto" and progress.resolve() == "bar"))
        if cfg.resume:  # the run's own config, with what this command line changes
            cfg = resume_config(cfg, list(HydraConfig.get().overrides.task))
        results = train(cfg)
    except (ConfigError, tracking.TrackingError, tracking.ResumeError, FileNotFoundError) as err:  # one line
        print(f"cricket-attn-train: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    best_val = results.get("calibration/val_log_loss_after", results.get("selection/best_val_loss"))
    return float("nan") if best_val is None else float(best_val)
