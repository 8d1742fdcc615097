"""The DataModule on real matches: what each split holds, refit, and recency weights."""

from __future__ import annotations

import torch
from omegaconf import OmegaConf

from cricket_attn.data.datamodule import CricketDataModule
from tests.conftest import FIXTURES


def make(data_config, tmp_path, **kw) -> CricketDataModule:
    dm = CricketDataModule(
        sources=[str(FIXTURES)],
        data_dir=str(tmp_path),
        min_count=5,
        batch_size=4,
        phases=OmegaConf.to_container(data_config.phases),
        split=OmegaConf.to_container(data_config.split),
        **kw,
    )
    dm.prepare_data()
    dm.setup("fit")
    return dm


def n_balls(dm, name):
    rows = dm.datasets[name].tensors["row"]
    return rows[rows >= 0].numel()


def test_splits_and_refit(data_config, tmp_path):
    dm = make(data_config, tmp_path)
    refit = make(data_config, tmp_path, refit=True)
    assert dm.encoder.last_season == 2023 and refit.encoder.last_season == 2024
    # Refit trains on training + validation seasons; the test seasons are never fitted on.
    assert n_balls(refit, "train") == n_balls(dm, "train") + n_balls(dm, "validation")
    assert n_balls(refit, "test") == n_balls(dm, "test")
    batch = next(iter(dm.train_dataloader()))
    assert batch["outcome"].shape == batch["mask"].shape and batch["numeric"].dim() == 3
    assert "weight" not in batch


def test_recency_weights_halve_every_half_life(data_config, tmp_path):
    dm = make(data_config, tmp_path, season_half_life=4.0)
    t = dm.datasets["train"].tensors
    w = t["weight"][t["mask"]]
    assert (t["weight"][~t["mask"]] == 0).all()
    # Fixture training seasons run 2008-2023: a 2008 ball weighs 0.5 ** (15 / 4) of a 2023 ball,
    # and the weights average 1 over the training balls.
    assert torch.isclose(w.min() / w.max(), torch.tensor(0.5 ** (15 / 4))) and torch.isclose(
        w.mean(), torch.tensor(1.0)
    )
    assert "weight" not in dm.datasets["validation"].tensors
