"""Innings as padded tensors and their batches (cricket_attn/data/batches.py): the padding, the trimming, and
the sampler's order (every innings once an epoch, similar lengths together, resumable, shardable)."""

from __future__ import annotations

import numpy as np
import torch

from cricket_attn.data.batches import IGNORE, BallSequences, BucketBatchSampler


def real_lengths(deliveries) -> torch.Tensor:
    """The fixture matches' innings lengths in deliveries, as the sampler sees them."""
    return torch.as_tensor(deliveries.groupby(["match_id", "innings"], observed=True).size().to_numpy())


def test_flat_rows_pad_on_the_right_and_a_batch_is_trimmed_to_its_longest():
    seq_id = np.array([0, 0, 0, 1, 2, 2])  # innings of 3, 1 and 2 balls, rows in order
    seqs = BallSequences.from_flat(
        {"outcome": np.array([1, 2, 3, 4, 5, 6]), "row": np.arange(6)},
        numeric=np.arange(12, dtype=np.float32).reshape(6, 2),
        seq_id=seq_id,
        per_sequence={"target": np.array([10, 20, 30])},
    )
    assert seqs.lengths.tolist() == [3, 1, 2] and len(seqs) == 3
    t = seqs.tensors
    assert t["outcome"].tolist() == [[1, 2, 3], [4, IGNORE, IGNORE], [5, 6, IGNORE]]  # padding is never a label
    assert t["row"].tolist() == [[0, 1, 2], [3, -1, -1], [4, 5, -1]]
    assert t["mask"].sum().item() == 6 and t["numeric"][1, 1:].abs().sum().item() == 0
    batch = seqs.collate([1, 2])
    assert batch["outcome"].shape == (2, 2)  # the longer of 1 and 2 balls, not 3
    assert batch["target"].tolist() == [20, 30]  # one per sequence, not trimmed
    kept = seqs.subset(torch.tensor([True, False, True]))
    assert kept.lengths.tolist() == [3, 2] and kept.tensors["target"].tolist() == [10, 30]


def test_an_epoch_holds_every_innings_once_and_batches_similar_lengths(deliveries):
    lengths = real_lengths(deliveries)
    sampler = BucketBatchSampler(lengths, batch_size=4, shuffle=True, seed=0)
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths))) and len(batches) == len(sampler)

    def padding(bs):  # the share of a batch's padded cells that hold no ball
        return sum(4 * int(lengths[b].max()) - int(lengths[b].sum()) for b in bs) / sum(
            4 * int(lengths[b].max()) for b in bs
        )

    shuffled = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(0)).tolist()
    at_random = [shuffled[i : i + 4] for i in range(0, len(shuffled), 4)]
    full = [b for b in batches if len(b) == 4]
    assert padding(full) < padding([b for b in at_random if len(b) == 4]) / 2
    assert list(BucketBatchSampler(lengths, 4, shuffle=False)) == list(BucketBatchSampler(lengths, 4, shuffle=False))
    assert list(sampler) != batches  # the next epoch, another order


def test_a_resumed_run_draws_the_order_of_its_epoch_not_the_first_again():
    """Told the trainer's epoch (`epoch_now`), a sampler made afresh at epoch 2 (a resumed run) gives the
    batches an uninterrupted sampler gives at its third epoch; counting for itself, it gives the first's."""
    lengths = torch.randint(20, 130, (203,))
    running = BucketBatchSampler(lengths, 8, shuffle=True, seed=3)
    epochs = [list(running) for _ in range(3)]
    assert epochs[0] != epochs[2]
    assert list(BucketBatchSampler(lengths, 8, shuffle=True, seed=3, epoch_now=lambda: 2)) == epochs[2]
    assert list(BucketBatchSampler(lengths, 8, shuffle=True, seed=3)) == epochs[0]


def test_bucket_sampler_shards_batches_across_data_parallel_processes():
    lengths = torch.randint(20, 130, (203,))
    whole = list(BucketBatchSampler(lengths, 8, shuffle=True, seed=3))
    shards = [list(BucketBatchSampler(lengths, 8, shuffle=True, seed=3, rank=r, world_size=3)) for r in range(3)]
    assert len({len(s) for s in shards}) == 1 and len(shards[0]) == len(whole) // 3  # every process as many steps
    seen = [tuple(b) for s in shards for b in s]
    assert len(seen) == len(set(seen)) and set(seen) <= {tuple(b) for b in whole}  # disjoint, from the same epoch
