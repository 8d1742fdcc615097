"""Innings as padded tensors, and the batches they are trained and scored in: a batch is trimmed to its
longest innings, and innings of similar length are batched together so that little of it is padding."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

IGNORE = -100  # label of padding positions (cross-entropy's ignore_index)


class BallSequences(torch.utils.data.Dataset):
    """Sequences padded on the right into fixed tensors; a batch is trimmed to its longest member."""

    def __init__(self, tensors: dict[str, torch.Tensor], lengths: torch.Tensor, per_sequence: tuple[str, ...] = ()):
        self.tensors, self.lengths = tensors, lengths
        self.per_sequence = per_sequence  # tensors with one entry per sequence, not per ball

    @classmethod
    def from_flat(
        cls,
        per_ball: dict[str, np.ndarray],
        numeric: np.ndarray,
        seq_id: np.ndarray,
        per_sequence: dict[str, np.ndarray] | None = None,
    ) -> BallSequences:
        n_seq = int(seq_id.max()) + 1 if len(seq_id) else 0
        lengths = np.bincount(seq_id, minlength=n_seq)
        # Rows of a sequence are contiguous and in order: position = rank within the sequence.
        starts = np.r_[0, np.cumsum(lengths)[:-1]]
        pos = np.arange(len(seq_id)) - starts[seq_id]
        T = int(lengths.max()) if n_seq else 0
        tensors = {}
        for name, values in per_ball.items():
            fill = IGNORE if name == "outcome" else (-1 if name == "row" else 0)
            padded = np.full((n_seq, T), fill, dtype=np.int64)
            padded[seq_id, pos] = values
            tensors[name] = torch.from_numpy(padded)
        padded = np.zeros((n_seq, T, numeric.shape[1]), dtype=np.float32)
        padded[seq_id, pos] = numeric
        tensors["numeric"] = torch.from_numpy(padded)
        mask = np.zeros((n_seq, T), dtype=bool)
        mask[seq_id, pos] = True
        tensors["mask"] = torch.from_numpy(mask)
        per_sequence = per_sequence or {}
        tensors.update({name: torch.from_numpy(values) for name, values in per_sequence.items()})
        return cls(tensors, torch.from_numpy(lengths), tuple(per_sequence))

    def subset(self, keep: torch.Tensor) -> BallSequences:
        """The sequences where `keep` (a boolean per sequence) holds."""
        return BallSequences({k: t[keep] for k, t in self.tensors.items()}, self.lengths[keep], self.per_sequence)

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i: int) -> int:
        return i  # batches are gathered in `collate`, one indexing per field rather than per sequence

    def collate(self, indices: list[int]) -> dict[str, torch.Tensor]:
        idx = torch.as_tensor(indices)
        T = int(self.lengths[idx].max())
        return {name: t[idx] if name in self.per_sequence else t[idx, :T] for name, t in self.tensors.items()}


class BucketBatchSampler(torch.utils.data.Sampler):
    """Batches of similar length: shuffle, sort within chunks of 50 batches, shuffle the batches.

    Under data-parallel training each of `world_size` processes takes every world_size-th batch
    (the same number each, so no process waits on another at the end of an epoch).

    Epoch e's order comes from seed + e: the epochs are counted from 0 by the sampler itself, or given by
    `epoch_now` (the trainer's current epoch), so that a run resumed at epoch e draws epoch e's order and
    not the first epoch's again.
    """

    def __init__(
        self,
        lengths: torch.Tensor,
        batch_size: int,
        shuffle: bool,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        epoch_now: Callable[[], int] | None = None,
    ):
        self.lengths, self.batch_size, self.shuffle, self.seed = lengths, batch_size, shuffle, seed
        self.rank, self.world_size = rank, world_size
        self.epoch, self.epoch_now = 0, epoch_now

    def __iter__(self):
        if self.epoch_now is not None:
            self.epoch = self.epoch_now()
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        order = torch.randperm(len(self.lengths), generator=g) if self.shuffle else torch.arange(len(self.lengths))
        chunk = self.batch_size * 50
        batches = []
        for start in range(0, len(order), chunk):
            part = order[start : start + chunk]
            part = part[torch.argsort(self.lengths[part], descending=True, stable=True)]
            batches += [part[i : i + self.batch_size].tolist() for i in range(0, len(part), self.batch_size)]
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=g)]
        if self.world_size > 1:
            batches = batches[self.rank : len(self) * self.world_size : self.world_size]
        return iter(batches)

    def __len__(self) -> int:
        n = (len(self.lengths) + self.batch_size - 1) // self.batch_size
        return n // self.world_size if self.world_size > 1 else n
