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


def test_a_competition_weighted_up_counts_that_many_times(data_config, tmp_path):
    """Pooled with a second competition (the T20 Blast of 2023), the IPL at weight 3: each IPL training ball
    weighs three times a Blast ball of the same season, with the weights' mean still 1."""
    from tests.data.test_leagues import LEAGUES

    blast = tmp_path / "blast"
    blast.mkdir()
    (blast / "1347699.json").write_bytes((LEAGUES / "1347699.json").read_bytes())
    dm = CricketDataModule(
        sources=[str(FIXTURES), str(blast)],
        data_dir=str(tmp_path),
        min_count=5,
        batch_size=4,
        phases=OmegaConf.to_container(data_config.phases),
        split=OmegaConf.to_container(data_config.split),
        competition_weights={"Indian Premier League": 3},
    )
    dm.setup("fit")
    t = dm.datasets["train"].tensors
    rows = t["row"][t["mask"]]
    train = dm.split.split(dm.tables.deliveries)["train"]
    train = train[~train["is_super_over"].astype(bool)]
    competition = train.loc[rows.numpy(), "competition"].astype(str).to_numpy()
    season = train.loc[rows.numpy(), "season"].to_numpy()
    w = t["weight"][t["mask"]].numpy()
    ipl_2023 = w[(competition == "Indian Premier League") & (season == 2023)]
    assert len(set(ipl_2023.round(6))) == 1 and len(set(w[competition == "T20 Blast"].round(6))) == 1
    assert abs(ipl_2023[0] / w[competition == "T20 Blast"][0] - 3) < 1e-5 and abs(w.mean() - 1) < 1e-5
