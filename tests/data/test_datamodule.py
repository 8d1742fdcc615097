"""The DataModule on real matches: what each split holds, refit, and recency weights."""

from __future__ import annotations

import torch
from omegaconf import OmegaConf

from cricket_attn.data.datamodule import CricketDataModule
from tests.conftest import FIXTURES


def make(data_config, tmp_path, *others: str, **kw) -> CricketDataModule:
    """The DataModule on the IPL fixtures, pooled with `others`, matches of other competitions by id."""
    from tests.data.test_leagues import LEAGUES

    sources = [str(FIXTURES)]
    if others:
        sources.append(str(tmp_path / "others"))
        (tmp_path / "others").mkdir(exist_ok=True)
        for match in others:
            (tmp_path / "others" / f"{match}.json").write_bytes((LEAGUES / f"{match}.json").read_bytes())
    kw = {
        "teacher": None,
        "records": None,
        "trees": None,
        "season_half_life": None,
        **kw,
    }  # career rates, equal weights
    dm = CricketDataModule(
        sources=sources,
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
    assert (dm.encoder.trained_until, refit.encoder.trained_until) == (2023, 2024)
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


def test_training_on_some_competitions_keeps_the_encoder_fitted_on_all(data_config, tmp_path):
    """data.train_competitions: the IPL's innings alone train and validate (a BBL match of January 2024
    leaves the validation set), while the encoder is the one every training ball fits; a competition
    with no training balls is one error naming it."""
    import pytest

    def pooled(**kw):  # the T20 Blast of 2023, the Big Bash of January 2024
        return make(data_config, tmp_path, "1347699", "1386137", **kw)

    every, ipl = pooled(), pooled(train_competitions=["Indian Premier League"])
    assert ipl.encoder.to_dict() == every.encoder.to_dict()
    assert len(ipl.datasets["train"]) == len(every.datasets["train"]) - 2  # the Blast's two innings
    bbl = int((every.validation_deliveries["competition"] == "Big Bash League").sum())
    assert bbl > 200 and n_balls(ipl, "validation") == n_balls(every, "validation") - bbl
    assert set(ipl.validation_deliveries["competition"].astype(str)) == {"Indian Premier League"}
    assert n_balls(ipl, "test") == n_balls(every, "test")
    # The kept innings are encoded as among all the others (rates out of fold over every training ball).
    kept = {int(r[0]): i for i, r in enumerate(every.datasets["train"].tensors["row"])}
    for i, r in enumerate(ipl.datasets["train"].tensors["row"][:5]):
        same = kept[int(r[0])]
        assert torch.equal(
            ipl.datasets["train"].tensors["numeric"][i], every.datasets["train"].tensors["numeric"][same]
        )
    with pytest.raises(ValueError, match="train_competitions: 'SA20' has no training deliveries"):
        pooled(train_competitions=["SA20"])


def test_records_with_their_defaults_are_records(data_config, tmp_path):
    """`data.records={}` (every setting its default) reads records; null reads rates."""
    from cricket_attn.data.records import RecordSettings

    dm = make(data_config, tmp_path, records={})
    assert dm.encoder.records == RecordSettings().to_dict() and not dm.encoder.rates
    assert dm.encoder.record_book is not None
    assert make(data_config, tmp_path / "rates", records=None).encoder.records is None
