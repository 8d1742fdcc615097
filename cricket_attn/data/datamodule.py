"""The Lightning DataModule: the deliveries table, split by season, as batches of ball sequences."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import pytorch_lightning as pl
import torch

from cricket_attn.config import project_path
from cricket_attn.data.batches import BallSequences, BucketBatchSampler
from cricket_attn.data.deliveries import Ingested, PhaseRules, load_tables
from cricket_attn.data.features import RATE_STRENGTH
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.data.sources import EMBEDDED, configured_sources
from cricket_attn.data.splits import SeasonSplit
from cricket_attn.data.teacher import cached_teacher
from cricket_attn.laws import N_OUTCOMES

# The settings (`data.` keys) the encoder is fitted from: runs that differ in one of them have other
# vocabularies, rates or features, and a model of one cannot read the other's batches. The others (batch
# sizes, the teacher, `train_competitions`, the balls' weights) change what is trained on, not the encoder.
ENCODER_SETTINGS = (
    "sources",
    "phases",
    "split",
    "min_count",
    "rate_strength",
    "history_balls",
    "first_innings",
    "competition_min_count",
    "records",
)


def encoder_settings(data: Mapping) -> dict:
    """The `data` settings (plain values) that fit the encoder: compared between runs before any data is read."""
    return {key: data.get(key) for key in ENCODER_SETTINGS}


class CricketDataModule(pl.LightningDataModule):
    """`prepare_data` fetches and ingests (cached); `setup` splits by season and fits the encoder
    (vocabularies, player rates, feature scaling) on the training seasons only.

    `season_half_life` weights training balls by recency: a ball from h seasons before the latest
    training season counts half as much, which tracks the scoring drift of recent seasons.

    With `refit=True` the encoder and the training set take the validation seasons too: the second
    stage of "choose epochs on 2024, then refit through 2024". Test seasons are never fitted on.

    `history_balls` K gives each ball its batter's and bowler's last K balls of earlier matches
    (cricket_attn.data.histories), taken from the whole table: a history never holds a later match.
    `first_innings` gives each chase every ball of its first innings.

    `train_competitions` (a list) trains and validates on those competitions' innings alone, while the
    encoder, the rates and the teacher are fitted on every training ball as without it: a pooled model
    fine-tuned on one league (`init_from` in conf/config.yaml) sees its features as it did. The test keeps
    every competition.

    The defaults are conf/data/ipl.yaml's (a test holds them equal); the settings that are structures there
    (phases, split, teacher, records, trees) are required, conf/ being their one source.

    `teacher` (weight, folds) mixes each training ball's outcome with gradient-boosted trees' (`trees`, their
    settings) out-of-fold probabilities for it (cricket_attn.data.teacher): the training batches then carry
    `soft_target`, what the loss is taken against. Validation and test batches keep the outcomes alone.
    """

    def __init__(
        self,
        sources: Sequence[str] | None = None,
        data_dir: str = "data",
        *,
        phases: Mapping,
        split: Mapping,
        teacher: Mapping | None,
        records: Mapping | None,
        trees: Mapping | None,
        min_count: int | None = None,
        rate_strength: float = RATE_STRENGTH,
        batch_size: int = 16,
        eval_batch_size: int = 256,
        num_workers: int = 0,
        refit: bool = False,
        seed: int = 0,
        season_half_life: float | None = 4.0,
        history_balls: int = 0,
        first_innings: bool = False,
        competition_min_count: int = 5000,
        train_competitions: Sequence[str] | None = None,
    ):
        super().__init__()
        self.sources = configured_sources(sources)
        self.data_dir = project_path(data_dir)
        self.phases = PhaseRules.from_config(phases)
        self.split = SeasonSplit.from_config(split)
        self.min_count, self.rate_strength = min_count, rate_strength
        self.batch_size, self.eval_batch_size, self.num_workers = batch_size, eval_batch_size, num_workers
        self.refit, self.seed = refit, seed
        self.season_half_life = season_half_life
        self.teacher = dict(teacher) if teacher else None
        self.trees = dict(trees or {})  # the teacher's LightGBM settings (cricket_attn.data.trees)
        self.history_balls, self.first_innings = history_balls, first_innings
        self.competition_min_count = competition_min_count
        self.train_competitions = list(train_competitions) if train_competitions else None
        self.records = None if records is None else dict(records)  # {}: the defaults
        if self.teacher and not 0 <= float(self.teacher["weight"]) <= 1:
            raise ValueError(f"data.teacher.weight={self.teacher['weight']} must lie between 0 and 1")
        self.encoder: SequenceEncoder | None = None
        self.tables: Ingested | None = None
        self.datasets: dict[str, BallSequences] = {}

    def prepare_data(self) -> None:
        if self.tables is None:  # fetched and ingested (cached) once; a module set up already has them
            load_tables(self.sources, self.phases, self.data_dir)

    def setup(self, stage: str | None = None) -> None:
        if self.datasets:
            return
        self.tables = load_tables(self.sources, self.phases, self.data_dir)
        deliveries = self.tables.deliveries
        parts = self.split.split(deliveries)
        fit_on = parts["train"]
        if self.refit:
            labels = self.split.label(deliveries["season"])
            fit_on = deliveries[labels.isin(["train", "validation"])].reset_index(drop=True)
        # Players' histories and records come from every delivery there is: each ball's hold only earlier matches.
        if self.encoder is None:
            self.encoder, train_set = SequenceEncoder.fit_encode(
                fit_on,
                self.min_count,
                self.rate_strength,
                self.history_balls,
                deliveries,
                self.first_innings,
                self.competition_min_count,
                self.records,
            )
            self.encoder.sources = self.sources or [EMBEDDED]  # where scoring finds the matches the records read
        else:  # restored from a checkpoint
            if self.encoder.reads_known:
                self.encoder.attach_known(deliveries)
            train_set = self.encoder.encode(fit_on, out_of_fold=True)
            # A refit that continues a model on its encoder trains it through a later season than the encoder's.
            self.encoder.trained_until = int(fit_on["season"].max())
        validation = parts["validation"]
        if self.train_competitions:
            validation = validation[validation["competition"].isin(self.train_competitions)].reset_index(drop=True)
            for c in self.train_competitions:
                if not (fit_on["competition"] == c).any():
                    raise ValueError(f"train_competitions: {c!r} has no training deliveries in {self.tables.sources}")
            if validation.empty:
                raise ValueError(f"train_competitions: none of {self.train_competitions} has validation deliveries")
        self.validation_deliveries = validation  # what the validation loss and the temperature are taken on
        self.datasets = {
            "train": train_set,
            "validation": self.encoder.encode(validation),
            "test": self.encoder.encode(parts["test"]),
        }
        if self.train_competitions:  # the innings of these competitions, encoded among all the others
            first = self.datasets["train"].tensors["row"][:, 0].numpy()
            kept = fit_on["competition"].astype(object).to_numpy()[first]
            self.datasets["train"] = self.datasets["train"].subset(
                torch.from_numpy(pd.Series(kept).isin(self.train_competitions).to_numpy(copy=True))
            )
        if self.season_half_life:
            train = self.datasets["train"].tensors
            season = torch.from_numpy(fit_on["season"].to_numpy(copy=True))
            age = (season.max() - season[train["row"].clamp(min=0)]).float()  # (N, T) seasons before the latest
            weight = torch.pow(0.5, age / self.season_half_life) * train["mask"]
            # Mean 1 over the training balls, so the loss of a batch (sum of weighted losses over its real
            # balls, divided by their number) is larger for batches of recent innings than of old ones.
            train["weight"] = weight / weight[train["mask"]].mean()
        if self.teacher and float(self.teacher["weight"]) > 0:
            self._add_soft_targets(fit_on)

    def _add_soft_targets(self, fit_on) -> None:
        """Training targets: (1 - weight) * one-hot outcome + weight * the teacher's out-of-fold probabilities,
        from trees fitted on the balls this stage fits (the refit's on the validation season too)."""
        regular = fit_on[~fit_on["is_super_over"].astype(bool)]  # the sequences leave super overs out
        # Folds seeded 0 whatever the run's seed: every ensemble member trains on the same (cached) teacher.
        teacher = cached_teacher(
            regular,
            dict(self.trees),
            int(self.teacher["folds"]),
            seed=0,
            rate_strength=self.rate_strength,
            cache_dir=self.data_dir / "cache",
            book=self.encoder.record_book,  # an encoder reading records: the trees read them too
        )
        by_row = torch.zeros(len(fit_on), N_OUTCOMES)
        by_row[torch.from_numpy(regular.index.to_numpy(copy=True))] = torch.from_numpy(teacher.oof)
        train = self.datasets["train"].tensors
        w = float(self.teacher["weight"])
        onehot = torch.nn.functional.one_hot(train["outcome"].clamp(min=0), N_OUTCOMES).float()
        soft = (1 - w) * onehot + w * by_row[train["row"].clamp(min=0)]
        train["soft_target"] = soft * train["mask"].unsqueeze(-1)  # padding positions: all zero

    def _loader(self, name: str, shuffle: bool) -> torch.utils.data.DataLoader:
        ds = self.datasets[name]
        size = self.batch_size if shuffle else self.eval_batch_size
        trainer = self.trainer  # None outside a Trainer (e.g. notebooks)
        rank, world = (trainer.global_rank, trainer.world_size) if trainer is not None else (0, 1)
        epoch_now = (lambda: trainer.current_epoch) if trainer is not None else None  # a resumed run's order too
        sampler = BucketBatchSampler(
            ds.lengths, size, shuffle=shuffle, seed=self.seed, rank=rank, world_size=world, epoch_now=epoch_now
        )
        return torch.utils.data.DataLoader(
            ds, batch_sampler=sampler, collate_fn=ds.collate, num_workers=self.num_workers
        )

    def train_dataloader(self):
        return self._loader("train", shuffle=True)

    def val_dataloader(self):
        return self._loader("validation", shuffle=False)

    def test_dataloader(self):
        return self._loader("test", shuffle=False)

    def state_dict(self) -> dict:
        return {"encoder": self.encoder.to_dict()} if self.encoder else {}

    def same_encoder(self, state: dict | None) -> bool:
        """Whether a checkpoint's stored module `state` has this module's encoder: the same vocabularies,
        rates and scaling, whatever season each model was trained until (a refit continuing a model trains
        it a season further through the same encoder)."""

        def fitted(s: dict | None) -> dict:
            return {k: v for k, v in (s or {}).get("encoder", {}).items() if k != "trained_until"}

        return fitted(state) == fitted(self.state_dict())

    def load_state_dict(self, state: dict) -> None:
        """A resumed run's encoder, from its checkpoint. Histories are not saved with it: after `setup`
        (Lightning restores this after it), they are attached again from the tables, as `setup` does."""
        if "encoder" in state:
            self.encoder = SequenceEncoder.from_dict(state["encoder"])
            if self.encoder.reads_known and self.tables is not None:
                self.encoder.attach_known(self.tables.deliveries)
