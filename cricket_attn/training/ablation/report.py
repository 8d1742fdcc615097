"""The ablation's report: each variant paired with its reference on the same balls (the log loss difference
averaged over the seeds both have, with a 95% bootstrap interval by match), as markdown and an MLflow run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from cricket_attn import tracking
from cricket_attn.metrics import match_bootstrap_sums
from cricket_attn.training.ablation.jobs import REFERENCE, Job


def match_sums(variant: dict, reference: dict) -> pd.DataFrame:
    """Per match, the variant's summed log loss minus the reference's (`diff`), and its balls."""
    mine = pd.DataFrame(variant["matches"], columns=["match_id", "balls", "loss"]).set_index("match_id")
    ref = pd.DataFrame(reference["matches"], columns=["match_id", "balls", "loss"]).set_index("match_id")
    if set(mine.index) != set(ref.index) or not (ref.loc[mine.index, "balls"] == mine["balls"]).all():
        raise ValueError(f"runs {variant['run']!r} and {reference['run']!r} did not score the same balls")
    return pd.DataFrame({"diff": mine["loss"] - ref.loc[mine.index, "loss"], "balls": mine["balls"]})


def seed_averaged_difference(variant: list[dict], reference: list[dict], n_boot: int) -> dict:
    """Per match, the variant's log loss minus the reference's, averaged over the seeds (the records
    are paired seed by seed), per ball with its bootstrap interval by match."""
    sums = [match_sums(v, r) for v, r in zip(variant, reference)]
    mean = pd.concat([s["diff"] for s in sums], axis=1).mean(axis=1)
    return match_bootstrap_sums(mean.to_numpy(), sums[0]["balls"].to_numpy(), n_boot)


def comparisons(cfg: DictConfig, runs: dict[Job, dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, seeds), from the records of this ablation's runs. The summary has one row per variant and
    protocol: seeds, mean log loss and ECE over seeds, epochs chosen, and the seed-averaged paired
    difference from the reference (positive: the variant is worse). `seeds` has one row per run, with its
    own paired difference."""
    rows, per_seed = [], []
    for protocol in cfg.protocols:
        for variant in cfg.variants:
            against = cfg.get("against", {}).get(variant, REFERENCE)
            seeds = sorted(job.seed for job in runs if job.variant == variant and job.protocol == protocol)
            if not seeds:
                continue
            for s in seeds:
                rec = runs[Job(variant, protocol, s)]
                seed_row = {
                    "protocol": protocol,
                    "variant": variant,
                    "seed": s,
                    "run": rec["run"],
                    "commit": rec["commit"],
                    **{k: rec[k] for k in ("log_loss", "ece", "epochs", "val_log_loss")},
                }
                if variant != against and Job(against, protocol, s) in runs:
                    sums = match_sums(rec, runs[Job(against, protocol, s)])
                    seed_row["diff"] = float(sums["diff"].sum() / sums["balls"].sum())
                per_seed.append(seed_row)
            mine = pd.DataFrame([r for r in per_seed if r["variant"] == variant and r["protocol"] == protocol])
            row = {
                "protocol": protocol,
                "variant": variant,
                "against": against,
                "seeds": len(seeds),
                **mine[["log_loss", "ece", "epochs", "val_log_loss"]].astype(float).mean().to_dict(),
                "epochs_chosen": ",".join(str(int(e)) for e in mine["epochs"]),
            }
            row.update(seed_paired(cfg, runs, variant, against, protocol))
            control = cfg.get("control")
            if control and variant != control:
                row.update({f"control_{k}": v for k, v in seed_paired(cfg, runs, variant, control, protocol).items()})
            rows.append(row)
    return pd.DataFrame(rows), pd.DataFrame(per_seed)


def seed_paired(cfg: DictConfig, runs: dict[Job, dict], variant: str, against: str, protocol: str) -> dict:
    """The variant's seed-averaged difference from `against` on the protocol's test seasons (`diff`, with
    `ci_low`, `ci_high`) and on its validation season (`val_diff`), over the seeds both have; {} if none."""
    paired = sorted(
        j.seed
        for j in runs
        if j.variant == variant and j.protocol == protocol and Job(against, protocol, j.seed) in runs
    )
    if variant == against or not paired:
        return {}
    mine, theirs = [runs[Job(variant, protocol, s)] for s in paired], [runs[Job(against, protocol, s)] for s in paired]
    # The validation season's log loss (the selection model's, calibrated): one more season to point the
    # same way, with no interval (the record keeps its total, not its matches).
    val_diff = float(np.mean([m["val_log_loss"] - t["val_log_loss"] for m, t in zip(mine, theirs)]))
    return {"paired_seeds": len(paired), "val_diff": val_diff, **seed_averaged_difference(mine, theirs, cfg.n_boot)}


def report(cfg: DictConfig, rows: pd.DataFrame) -> str:
    """The summary of `comparisons` as a markdown table, variants down, protocols across."""
    if rows.empty:
        return f"# Ablation `{cfg.name}`\n\nNo finished runs yet.\n"
    protocols = [p for p in cfg.protocols if p in set(rows["protocol"])]
    head = (
        "| variant | "
        + " | ".join(
            f"{p}: log loss (epochs by seed) | {p}: - reference [95% CI] | {p}: validation - reference"
            for p in protocols
        )
        + " |"
    )
    lines = [
        f"# Ablation `{cfg.name}`",
        "",
        "Each cell: the mean over seeds of the run's log loss (nats per ball) on the protocol's test seasons "
        "(in brackets, the epochs each seed's refit trained, as chosen on its validation season), "
        "and the per-ball difference from its reference (`default` unless named), averaged over the seeds "
        "both have, with a 95% bootstrap interval by match. Positive: the variant is worse. Protocols: "
        + "; ".join(f"`{p}` {' '.join(o) if o else '(the default split)'}" for p, o in cfg.protocols.items())
        + ". The third column of a protocol: the same difference on its validation season (the selection "
        "model's calibrated log loss; no interval). Every run's own numbers are in `ablation_seeds.csv`.",
        "",
        head,
        "|" + "---|" * (1 + 3 * len(protocols)),
    ]
    variants = [v for v in cfg.variants if v in set(rows["variant"])]
    for variant in variants:
        cells = []
        for protocol in protocols:
            hit = rows[(rows["variant"] == variant) & (rows["protocol"] == protocol)]
            if hit.empty:
                cells += ["", "", ""]
                continue
            r = hit.iloc[0]
            cells.append(f"{r['log_loss']:.4f} ({r['epochs_chosen']})")
            if pd.notna(r.get("diff")):
                vs = "" if r["against"] == REFERENCE else f" vs {r['against']}"
                cells.append(interval_cell(r, "") + vs)
            else:
                cells.append("reference" if variant == r["against"] or variant == REFERENCE else "")
            cells.append(f"{r['val_diff']:+.4f}" if pd.notna(r.get("val_diff")) else "")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    control = cfg.get("control")
    if control and "control_diff" in rows:
        lines += [
            "",
            f"Against the control, `{control}` (the same seeds, balls and intervals; negative: the variant "
            "is better than the control):",
            "",
            "| variant | "
            + " | ".join(f"{p}: - {control} [95% CI] | {p}: validation - {control}" for p in protocols)
            + " |",
            "|" + "---|" * (1 + 2 * len(protocols)),
        ]
        for variant in variants:
            cells = []
            for protocol in protocols:
                hit = rows[(rows["variant"] == variant) & (rows["protocol"] == protocol)]
                r = hit.iloc[0] if not hit.empty else {}
                if variant == control:
                    cells += ["control", ""]
                elif pd.notna(r.get("control_diff")):
                    cells += [interval_cell(r, "control_"), f"{r['control_val_diff']:+.4f}"]
                else:
                    cells += ["", ""]
            lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def interval_cell(row, prefix: str) -> str:
    """A report cell: the paired difference (`diff`, or `control_diff` with prefix `control_`) and its interval."""
    return f"{row[prefix + 'diff']:+.4f} [{row[prefix + 'ci_low']:+.4f}, {row[prefix + 'ci_high']:+.4f}]"


def log_report(cfg: DictConfig, table: str, rows: pd.DataFrame, seeds_csv: Path) -> None:
    """The report as an MLflow run of the ablation experiment: the table as its description and artifact,
    each variant's paired difference as metrics (`<protocol>/<variant>/diff`), every run's numbers."""
    uri = cfg.paths.mlflow_uri
    client = tracking.MlflowClient(uri)
    exp = client.get_experiment_by_name(cfg.experiment)
    for old in client.search_runs([exp.experiment_id], f"tags.ablation_summary = '{cfg.name}'") if exp else []:
        client.delete_run(old.info.run_id)  # one summary per ablation: the latest report
    run_id = tracking.start_run(
        uri, cfg.experiment, f"{cfg.name} summary", {"ablation_summary": cfg.name}, description=table
    )
    with tracking.ending(uri, run_id):
        for r in rows.to_dict("records"):
            for key in (
                "log_loss",
                "ece",
                "diff",
                "ci_low",
                "ci_high",
                "control_diff",
                "control_ci_low",
                "control_ci_high",
            ):
                if key in r and pd.notna(r[key]):
                    client.log_metric(run_id, f"{r['protocol']}/{r['variant']}/{key}", float(r[key]))
        client.log_text(run_id, table, "ablation.md")
        client.log_artifact(run_id, str(seeds_csv))
