"""Checkpoints as plain files (cricket_attn/inference/checkpoints.py): the final model written as one file of
members and calibration, read back to the same predictions, and every file that is not one refused in one
line naming it."""

from __future__ import annotations

import pytest
import torch

from cricket_attn.inference.checkpoints import FORMAT, FORMAT_KEY, PREFIX, CheckpointError, load_model, read, save_final
from cricket_attn.model import CricketTransformer, Ensemble, ModelConfig
from tests.test_model import TINY, random_batch


def checkpoint(path, seed: int, encoder: dict | None = None):
    """A member's checkpoint as training writes it: settings, weights under `model.`, the encoder, the format."""
    torch.manual_seed(seed)
    model = CricketTransformer(ModelConfig(**TINY))
    torch.save(
        {
            "hyper_parameters": {"model": ModelConfig(**TINY).to_dict()},
            "state_dict": {PREFIX + k: v for k, v in model.state_dict().items()},
            "CricketDataModule": encoder or {"encoder": "fitted on seasons to 2023"},
            FORMAT_KEY: FORMAT,
        },
        path,
    )
    return model.eval()


def test_the_final_model_is_its_members_mean_with_the_calibration_in_each(tmp_path):
    members = [checkpoint(tmp_path / f"m{i}.ckpt", seed=i) for i in range(3)]
    out = save_final([tmp_path / f"m{i}.ckpt" for i in range(3)], {"temperature": 1.5, "wicket_offset": -0.05},
                     tmp_path / "final.ckpt")  # fmt: skip
    model, ckpt = load_model(out)
    assert isinstance(model, Ensemble) and len(model.members) == 3
    assert all(m.cfg.temperature == 1.5 and m.cfg.wicket_offset == -0.05 for m in model.members)
    assert ckpt["CricketDataModule"] == {"encoder": "fitted on seasons to 2023"}
    batch = random_batch(members[0].cfg)
    calibrated = []
    for m in members:
        c = CricketTransformer(ModelConfig(**{**TINY, "temperature": 1.5, "wicket_offset": -0.05})).eval()
        c.load_state_dict(m.state_dict())
        calibrated.append(c)
    with torch.no_grad():
        mean = torch.stack([c(batch).softmax(-1) for c in calibrated]).mean(0)
        assert torch.allclose(model(batch).softmax(-1), mean, atol=1e-6)
    single, _ = load_model(save_final([tmp_path / "m0.ckpt"], None, tmp_path / "one.ckpt"))
    assert isinstance(single, CricketTransformer) and single.cfg.temperature == ModelConfig(**TINY).temperature


def test_members_of_different_encoders_are_refused(tmp_path):
    checkpoint(tmp_path / "a.ckpt", 0)
    checkpoint(tmp_path / "b.ckpt", 1, encoder={"encoder": "fitted on other seasons"})
    with pytest.raises(CheckpointError, match="different data encoders"):
        save_final([tmp_path / "a.ckpt", tmp_path / "b.ckpt"], None, tmp_path / "final.ckpt")
    assert not (tmp_path / "final.ckpt").exists()


def test_what_is_not_a_checkpoint_of_this_version_gets_one_line_naming_the_file(tmp_path):
    checkpoint(tmp_path / "ok.ckpt", 0)
    ckpt = torch.load(tmp_path / "ok.ckpt", weights_only=True)
    (tmp_path / "garbage.ckpt").write_bytes(b"not a zip at all")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.ckpt")
    torch.save({**ckpt, FORMAT_KEY: FORMAT + 1}, tmp_path / "later.ckpt")
    torch.save({k: v for k, v in ckpt.items() if k != FORMAT_KEY}, tmp_path / "older.ckpt")
    cases = {
        tmp_path: "is a folder",
        tmp_path / "missing.ckpt": "no such checkpoint file",
        tmp_path / "garbage.ckpt": "not a readable PyTorch checkpoint",
        tmp_path / "other.ckpt": "not a cricket_attn checkpoint",
        tmp_path / "later.ckpt": f"format {FORMAT + 1}",
        tmp_path / "older.ckpt": "no format",
    }
    for path, message in cases.items():
        with pytest.raises(CheckpointError, match=message) as err:
            read(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    half = (tmp_path / "ok.ckpt").read_bytes()
    (tmp_path / "cut.ckpt").write_bytes(half[: len(half) // 2])
    with pytest.raises(CheckpointError, match="cut.ckpt: not a readable"):
        load_model(tmp_path / "cut.ckpt")
