"""Training on real matches with a tiny config: reproducible, and checkpoints load anywhere."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import pytorch_lightning as pl
import torch
from omegaconf import OmegaConf

from cricket_attn.data.datamodule import CricketDataModule
from cricket_attn.inference.checkpoints import FORMAT, CheckpointError, load_model, save_final
from cricket_attn.training.lit_module import BallOutcomeModule, load_checkpoint, parameter_groups
from tests.conftest import FIXTURES
from tests.test_model import TINY as MODEL_TINY

TINY = dict(d_model=8, n_heads=2, n_layers=2, dropout=0.1, max_len=160)


def datamodule(data_config, tmp_path) -> CricketDataModule:
    dm = CricketDataModule(
        sources=[str(FIXTURES)],
        data_dir=str(tmp_path),
        phases=OmegaConf.to_container(data_config.phases),
        split=OmegaConf.to_container(data_config.split),
        min_count=5,
        batch_size=8,
        teacher=None,
        records=None,
        trees=None,
        season_half_life=None,
    )
    dm.prepare_data()
    dm.setup("fit")
    return dm


def fit(data_config, tmp_path, seed: int = 0, epochs: int = 2, **trainer_kw):
    pl.seed_everything(seed, workers=True)
    dm = datamodule(data_config, tmp_path)
    module = BallOutcomeModule(dict(dm.encoder.model_dims(), **TINY), lr=3e-3, warmup_steps=2)
    trainer = pl.Trainer(
        max_epochs=epochs,
        deterministic=True,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(tmp_path),
        **trainer_kw,
    )
    trainer.fit(module, dm)
    return trainer, module, dm


def test_same_seed_same_validation_loss(data_config, tmp_path):
    a = fit(data_config, tmp_path / "a", enable_checkpointing=False)[0].callback_metrics["val/loss"].item()
    b = fit(data_config, tmp_path / "b", enable_checkpointing=False)[0].callback_metrics["val/loss"].item()
    c = fit(data_config, tmp_path / "c", seed=1, enable_checkpointing=False)[0].callback_metrics["val/loss"].item()
    assert abs(a - b) <= 1e-6
    assert a != c
    assert 1.0 < a < 3.0  # a real loss over 10 classes (uniform is 2.30)


@pytest.mark.e2e  # a fresh process
def test_checkpoint_loads_in_a_fresh_process_with_weights_only(data_config, tmp_path):
    trainer, module, dm = fit(data_config, tmp_path, epochs=1)
    path = tmp_path / "model.ckpt"
    trainer.save_checkpoint(path)
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    assert ckpt["hyper_parameters"]["model"]["d_model"] == 8
    assert "encoder" in ckpt["CricketDataModule"]  # the fitted encoder travels with the weights
    batch = dm.datasets["test"].collate([0, 1])
    module.eval()
    with torch.no_grad():
        expected = module(batch).softmax(-1)[0, :5].tolist()
    # Lightning's own loading, with plain types only, in this process (a fresh process loads it below, through
    # the path without Lightning the scoring commands take).
    again = BallOutcomeModule.load_from_checkpoint(path, map_location="cpu", weights_only=True).eval()
    with torch.no_grad():
        assert torch.allclose(again(batch).softmax(-1)[0, :5], torch.tensor(expected), atol=1e-6)
    torch.save(batch, tmp_path / "batch.pt")
    loaded, _ = load_checkpoint(path)
    with torch.no_grad():
        assert torch.allclose(loaded(batch).softmax(-1)[0, :5], torch.tensor(expected), atol=1e-6)
    # Scoring reads the same weights without Lightning (the scoring commands start seconds sooner).
    code = (
        "import json, sys, torch\n"
        "from cricket_attn.inference.serving import load_trained\n"
        f"m = load_trained({str(path)!r}).model\n"
        f"batch = torch.load({str(tmp_path / 'batch.pt')!r}, weights_only=True)\n"
        "with torch.no_grad(): probs = m(batch).softmax(-1)[0, :5].tolist()\n"
        "print(json.dumps([probs, 'pytorch_lightning' in sys.modules]))\n"
    )
    probs, lightning = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )
    assert torch.allclose(torch.tensor(probs), torch.tensor(expected), atol=1e-6) and not lightning


def test_incompatible_checkpoints_get_a_clear_message(data_config, tmp_path):
    trainer, module, _ = fit(data_config, tmp_path, epochs=1)
    path = tmp_path / "model.ckpt"
    trainer.save_checkpoint(path)
    with pytest.raises(
        CheckpointError,
        match=r"does not fit model settings d_model=16.*is \[\d+, 8\] in the checkpoint but \[\d+, 16\] here",
    ):
        BallOutcomeModule.load_from_checkpoint(path, model=dict(module.hparams.model, d_model=16), weights_only=True)
    # A checkpoint of another layout (before the format was written, or a later one) is refused by its format.
    saved = torch.load(path, map_location="cpu", weights_only=True)
    assert saved["cricket_attn_format"] == FORMAT
    for version, said in ((None, "no format \\(written before 2026-11-27\\)"), (FORMAT + 1, f"format {FORMAT + 1}")):
        old = {k: v for k, v in saved.items() if k != "cricket_attn_format"}
        torch.save(old if version is None else dict(old, cricket_attn_format=version), tmp_path / "old.ckpt")
        for load in (load_checkpoint, load_model):
            with pytest.raises(CheckpointError, match=rf"old.ckpt: a checkpoint of {said}; this version .* format"):
                load(tmp_path / "old.ckpt")
    other = tmp_path / "other.ckpt"
    torch.save({"state_dict": {"w": torch.zeros(2)}}, other)
    with pytest.raises(CheckpointError, match="not a cricket_attn checkpoint"):
        load_checkpoint(other)
    (tmp_path / "junk.ckpt").write_text("hello")
    with pytest.raises(CheckpointError, match="not a readable PyTorch checkpoint"):
        load_checkpoint(tmp_path / "junk.ckpt")
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "missing.ckpt")
    # An ensemble checkpoint whose second member was made with other settings names that member.
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    state = {k: v for k, v in ckpt["state_dict"].items() if not k.endswith("head.weight")}
    ckpt["ensemble_members"] = [{"hyper_parameters": ckpt["hyper_parameters"], "state_dict": state}]
    torch.save(ckpt, tmp_path / "ensemble.ckpt")
    assert isinstance(load_checkpoint(tmp_path / "ensemble.ckpt")[0], BallOutcomeModule)  # the first member alone
    with pytest.raises(
        CheckpointError, match=r"ensemble.ckpt: ensemble member 2 does not load: .*head.weight is missing"
    ):
        load_model(tmp_path / "ensemble.ckpt")
    # Members fitted with different data encoders cannot make one model; nothing is written.
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    torch.save(dict(ckpt, CricketDataModule={"encoder": {}}), tmp_path / "other_encoder.ckpt")
    with pytest.raises(CheckpointError, match="ensemble members were fitted with different data encoders"):
        save_final([path, tmp_path / "other_encoder.ckpt"], None, tmp_path / "final.ckpt")
    assert not (tmp_path / "final.ckpt").exists()


def test_recency_weights_scale_a_batch_loss_by_its_seasons(data_config, tmp_path):
    dm = datamodule(data_config, tmp_path)
    module = BallOutcomeModule(dict(dm.encoder.model_dims(), **TINY), lr=3e-3).train()
    batch = dm.datasets["train"].collate(list(range(4)))
    torch.manual_seed(0)
    plain, _, n = module._loss(batch)
    ones = dict(batch, weight=batch["mask"].float())
    torch.manual_seed(0)
    assert torch.isclose(module._loss(ones)[0], plain)  # weight 1 everywhere: the plain mean
    # A batch of old innings (weight 0.25 each) counts a quarter, not the same after normalising.
    torch.manual_seed(0)
    assert torch.isclose(module._loss(dict(batch, weight=0.25 * ones["weight"]))[0], 0.25 * plain)


def test_weight_decay_reaches_matrices_and_embedding_tables_only():
    module = BallOutcomeModule(dict(MODEL_TINY))
    decayed, plain = parameter_groups(module, 0.3)
    assert decayed["weight_decay"] == 0.3 and plain["weight_decay"] == 0.0
    name = {id(p): n for n, p in module.named_parameters()}
    decayed_names = {name[id(p)] for p in decayed["params"]}
    plain_names = {name[id(p)] for p in plain["params"]}
    assert "model.batter.weight" in decayed_names and "model.head.weight" in decayed_names
    assert "model.head.bias" in plain_names and "model.ln_f.weight" in plain_names
    assert len(decayed_names) + len(plain_names) == len(list(module.parameters()))


def test_soft_targets_give_the_mixed_cross_entropy(data_config, tmp_path):
    dm = datamodule(data_config, tmp_path)
    module = BallOutcomeModule(dict(dm.encoder.model_dims(), **{**TINY, "dropout": 0.0, "entity_dropout": 0.0})).train()
    batch = dm.datasets["train"].collate(list(range(4)))
    real = batch["mask"]
    teacher = torch.softmax(torch.randn(*real.shape, 10, generator=torch.Generator().manual_seed(0)), -1)
    onehot = torch.nn.functional.one_hot(batch["outcome"].clamp(min=0), 10).float()
    soft = (0.7 * onehot + 0.3 * teacher) * real.unsqueeze(-1)
    loss = module._loss(dict(batch, soft_target=soft))[0]
    logp = module.model(batch).log_softmax(-1)[real]
    hard = -logp.gather(1, batch["outcome"][real].unsqueeze(1)).mean()
    assert torch.isclose(loss, 0.7 * hard - 0.3 * (teacher[real] * logp).sum(-1).mean(), atol=1e-5)
    assert torch.isclose(module.eval()._loss(dict(batch, soft_target=soft))[0], hard, atol=1e-5)  # eval: outcomes only


@pytest.mark.slow  # torch.compile on the CPU: a minute of compiling
def test_a_compiled_model_gives_the_eager_loss_and_the_same_checkpoint(data_config, tmp_path):
    dm = datamodule(data_config, tmp_path)
    settings = dict(dm.encoder.model_dims(), **{**TINY, "dropout": 0.0, "entity_dropout": 0.0})
    eager = BallOutcomeModule(settings).train()
    compiled = BallOutcomeModule(settings).train()
    compiled.load_state_dict(eager.state_dict())
    compiled.compile_model()
    assert list(compiled.state_dict()) == list(eager.state_dict())  # checkpoints read the same either way
    for n in (4, 7):  # two batch sizes and lengths: one compiled graph with dynamic shapes
        batch = dm.datasets["train"].collate(list(range(n)))
        a, b = eager._loss(batch)[0], compiled._loss(batch)[0]
        assert torch.isclose(a, b, atol=1e-4)
        b.backward()
        assert all(p.grad is not None for p in compiled.model.parameters() if p.requires_grad)
        compiled.zero_grad()
