"""Where one training step's time goes, on the configuration conf/ gives (or with overrides).

Usage: python benchmarks/train_step.py [--steps 100] [OVERRIDE ...]     e.g. data=t20, data.batch_size=64

Times, over the same `--steps` training batches of the selection stage (after a warm-up):
- the data pipeline: the sampler's batches gathered by `collate` (what the DataLoader does each step);
- each part of the model, forward and backward together, on the inputs it gets in the step: the numeric
  embedding (the match state and records, value and ramps into an MLP), the embeddings and positions,
  each block's attention and MLP, and the head with the loss against the teacher's soft targets;
- the optimiser's step with the gradient clipping Lightning applies;
- the whole step by hand (forward, backward, clip, step) and a step through Lightning's `Trainer.fit` (no
  validation; two fits of `--steps` and half as many batches, so a fit's set-up is left out): the
  difference is Lightning's own overhead (its loop, logging, hooks).
Prints a table in milliseconds a step and the share of the hand-made step. On a GPU (`trainer=gpu`: the
model, batches and steps there, the hand-made step under bf16 autocast as Lightning's bf16-mixed runs it,
each timing synchronised) `--profile` adds torch.profiler's view of 20 hand-made steps: the operators by
their own CPU time and by their device time, and the kernels launched a step (a step bound by launching
kernels spends its time on the CPU while the device waits). `compile=true` compiles the model first.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import hydra
import pytorch_lightning as pl
import torch
from hydra import compose, initialize_config_dir
from machine import cpu
from omegaconf import OmegaConf

from cricket_attn.config import CONF_DIR
from cricket_attn.training.lit_module import BallOutcomeModule, parameter_groups


def timed(fn, repeat: int = 1) -> float:
    sync()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    sync()
    return (time.perf_counter() - start) / repeat


def sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def profile(step, batches: list) -> None:
    """torch.profiler over `step` on each batch: the top operators by own CPU time and by device time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiler

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profiler(activities=activities) as prof:
        for batch in batches:
            step(batch)
        sync()
    events = prof.key_averages()
    print(events.table(sort_by="self_cpu_time_total", row_limit=20))
    if torch.cuda.is_available():
        print(events.table(sort_by="self_device_time_total", row_limit=20))
    on_device = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]  # the kernels themselves
    kernels = sum(e.count for e in on_device)
    device = sum(e.self_device_time_total for e in on_device) / 1e3 / len(batches)
    print(f"kernels launched a step: {kernels / len(batches):,.0f}; device busy {device:.1f} ms a step")


class Captured:
    """Each part's input in one forward pass (forward pre-hooks), to time it again alone."""

    def __init__(self, model: torch.nn.Module, parts: dict[str, torch.nn.Module]):
        self.inputs: dict[str, tuple] = {}
        self.handles = [
            m.register_forward_pre_hook(lambda mod, args, name=name: self.inputs.__setitem__(name, args))
            for name, m in parts.items()
        ]

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def part_time(module: torch.nn.Module, args: tuple) -> float:
    """Forward and backward of `module` on (a detached copy of) `args`, seconds."""
    args = tuple(a.detach().requires_grad_(a.is_floating_point()) if torch.is_tensor(a) else a for a in args)

    def step():
        out = module(*args)
        out = out if torch.is_tensor(out) else out[0]
        out.float().sum().backward()

    return timed(step)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=100, help="batches timed (within one epoch for Trainer.fit)")
    p.add_argument("--profile", action="store_true", help="also torch.profiler's view of 20 hand-made steps")
    p.add_argument("overrides", nargs="*")
    args = p.parse_args()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"), tempfile.TemporaryDirectory() as tmp:
        cfg = compose(config_name="config", overrides=[f"paths.output_dir={tmp}", *args.overrides])
        pl.seed_everything(cfg.seed)
        dm = hydra.utils.instantiate(cfg.data)
        dm.prepare_data()
        dm.setup("fit")
        model = {**dm.encoder.model_dims(), **OmegaConf.to_container(cfg.model, resolve=True)}
        gpu = cfg.trainer.accelerator == "gpu"
        device = torch.device("cuda" if gpu else "cpu")
        module = BallOutcomeModule(model, **OmegaConf.to_container(cfg.optim, resolve=True)).train().to(device)
        if cfg.compile:
            module.compile_model()
        ds = dm.datasets["train"]
        sampler = dm.train_dataloader().batch_sampler
        sampled = []
        while len(sampled) < args.steps + 10:  # epoch after epoch, as training draws them
            sampled += list(iter(sampler))
        sampled = sampled[: args.steps + 10]
        rows: dict[str, float] = {}
        rows["data: sampler and collate"] = timed(lambda: [ds.collate(b) for b in sampled[10:]]) / args.steps
        batches = [{k: v.to(device) for k, v in ds.collate(b).items()} for b in sampled]
        net = module.model
        parts = {"numeric embedding (values, ramps, MLP)": net.numeric, "positions": net.position}
        for i, block in enumerate(net.blocks):
            parts[f"block {i}: attention (qkv, softmax, out)"] = block.attn
            parts[f"block {i}: MLP"] = block.mlp
        parts["final norm + head"] = torch.nn.Sequential(net.ln_f, net.head)
        captured = Captured(net, {k: v for k, v in parts.items() if k != "final norm + head"})
        optimizer = torch.optim.AdamW(parameter_groups(module, cfg.optim.weight_decay), lr=cfg.optim.lr)

        def hand_step(batch):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=gpu):
                loss, _, _ = module._loss(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), cfg.trainer.gradient_clip_val or 1e9)
            optimizer.step()

        for batch in batches[:10]:
            hand_step(batch)
        if args.profile:
            profile(hand_step, batches[10:30])
        totals = dict.fromkeys(parts, 0.0)
        whole = loss_part = opt_part = 0.0
        for batch in batches[10:]:
            whole += timed(lambda batch=batch: hand_step(batch))
            captured.inputs.clear()
            logits = net(batch)
            for name, m in parts.items():
                if name == "final norm + head":
                    continue
                totals[name] += part_time(m, captured.inputs[name])
            x = captured.inputs["block 0: attention (qkv, softmax, out)"][0]  # stand-in of the right shape (B, T, C)
            totals["final norm + head"] += part_time(parts["final norm + head"], (x,))

            held = logits.detach()

            def loss_only(batch=batch, held=held):
                lg = held.requires_grad_()
                target = batch.get("soft_target")
                per_ball = -(target * lg.log_softmax(-1)).sum(-1) if target is not None else lg.sum(-1)
                (per_ball * batch.get("weight", batch["mask"].float())).sum().backward()

            loss_part += timed(loss_only)
            optimizer.zero_grad(set_to_none=True)
            module._loss(batch)[0].backward()
            opt_part += timed(
                lambda: (
                    torch.nn.utils.clip_grad_norm_(module.parameters(), cfg.trainer.gradient_clip_val or 1e9),
                    optimizer.step(),
                )
            )
        captured.close()
        n = args.steps
        rows.update({name: t / n for name, t in totals.items()})
        rows["loss against the soft targets (log-softmax)"] = loss_part / n
        rows["optimiser: clip and AdamW step"] = opt_part / n
        rows["the whole step by hand (forward, backward, clip, step)"] = whole / n

        def fit_seconds(batches: int) -> float:
            trainer = hydra.utils.instantiate(
                cfg.trainer,
                max_epochs=1,
                limit_train_batches=batches,
                limit_val_batches=0,
                logger=False,
                enable_checkpointing=False,
                enable_progress_bar=False,
                enable_model_summary=False,
                callbacks=[],
            )
            fresh = BallOutcomeModule(model, **OmegaConf.to_container(cfg.optim, resolve=True))
            if cfg.compile:
                fresh.compile_model()
            return timed(lambda: trainer.fit(fresh, dm))

        # Two fits, of n and n/2 batches: their difference leaves out what a fit costs before its first step.
        half = n // 2 if (n := args.steps) > 1 else 1
        rows["a step in Trainer.fit (one fit's set-up left out)"] = (fit_seconds(n) - fit_seconds(half)) / (n - half)
        balls = sum(int(b["mask"].sum()) for b in batches[10:]) / n
    step = rows["the whole step by hand (forward, backward, clip, step)"]
    print(
        f"device: {torch.cuda.get_device_name() if gpu else cpu()}; torch {torch.__version__}; "
        f"threads {torch.get_num_threads()}; {n} steps, "
        f"{balls:,.0f} deliveries a batch; overrides: {' '.join(args.overrides) or 'none'}"
    )
    print(f"{'what':<58} {'ms a step':>10} {'share':>7}")
    for name, t in rows.items():
        print(f"{name:<58} {1000 * t:>10.2f} {t / step:>7.1%}")
    fit = rows["a step in Trainer.fit (one fit's set-up left out)"]
    print(f"deliveries/s by hand: {balls / step:,.0f}; through Lightning: {balls / fit:,.0f}")


if __name__ == "__main__":
    main()
