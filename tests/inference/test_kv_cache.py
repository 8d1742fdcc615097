"""The simulator's cache: rows sharing one innings' real balls, and players' rates kept by slot, give
exactly what a full pass of the model gives."""

from __future__ import annotations

import pytest
import torch

from cricket_attn.inference.kv_cache import SimulationCache
from cricket_attn.model import CricketTransformer, ModelConfig
from tests.test_model import ATTENTION_VARIANTS, TINY, random_batch


@pytest.mark.parametrize("variant", ATTENTION_VARIANTS)
def test_rows_sharing_one_cache_step_as_each_row_alone(variant):
    """One sequence's cache shared by rows that have seen its first 0, 4, 11 and 17 balls (held once, not
    copied): the next balls (three steps, a row dropped after the first) get exactly the predictions of a
    full pass over each prefix and its next balls."""
    torch.manual_seed(0)
    cfg = ModelConfig(**{**TINY, "d_model": 16, "n_layers": 2, **variant})
    model = CricketTransformer(cfg).eval()
    batch = {name: t[:1] for name, t in random_batch(cfg).items()}
    per_sequence = ("batter_history", "bowler_history", "first_innings")
    lengths = torch.tensor([0, 4, 11, 17])
    with torch.no_grad():
        full = model(batch).softmax(-1)[0]  # (T, classes)
        cache = SimulationCache(cfg.n_layers)
        model(batch, cache=cache)
        cut = cache.share_rows(lengths)
        assert cut.length == 0 and cut.shared.keys[0].dim() == 3  # one copy of the balls, (H, S, hd)
        for step in range(3):
            at = lengths + step
            nxt = {
                name: t.expand(len(lengths), *t.shape[1:]) if name in per_sequence else t[0, at][:, None]
                for name, t in batch.items()
            }
            got = model(nxt, cache=cut).softmax(-1)[:, 0]
            assert (got - full[at]).abs().max().item() <= 1e-5
            assert torch.equal(torch.as_tensor(cut.balls()), at + 1)
            if step == 0:  # the row at 4 balls ends: the others go on without it
                keep = torch.tensor([0, 2, 3])
                cut, lengths = cut.take_rows(keep), lengths[keep]


PER_SEQUENCE = ("batter_history", "bowler_history", "first_innings")


def balls(batch: dict[str, torch.Tensor], rows: torch.Tensor, start, stop: int) -> dict[str, torch.Tensor]:
    """Rows `rows` of `batch` at places start ... stop - 1 (`start` one per row, or one for all)."""
    places = torch.as_tensor(start).reshape(-1, 1) + torch.arange(stop - int(torch.as_tensor(start).max()))
    places = places.expand(len(rows), -1)
    return {name: t[rows] if name in PER_SEQUENCE else t[rows[:, None], places] for name, t in batch.items()}


@pytest.mark.parametrize("variant", ATTENTION_VARIANTS)
def test_a_cache_cut_at_a_full_buffer_and_stepped_past_it_is_a_full_pass(variant):
    """The buffers grow 16 balls at a time and a one-ball step reads them whole, the tail masked: rows taken
    from a cache of exactly 16 balls (a full buffer, one row repeated), stepped 3 balls at once and then one at a
    time into the next block, get a full pass's predictions; so do rows sharing one cache (`share_rows`), stepped
    3 balls at once from 0, 1 and 2 balls and then one at a time past 16."""
    torch.manual_seed(0)
    cfg = ModelConfig(**{**TINY, "d_model": 16, "n_layers": 2, **variant})
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    with torch.no_grad():
        full = model(batch).softmax(-1)  # (B, T, classes)
        cache, rows = SimulationCache(cfg.n_layers), torch.arange(3)
        for ball in range(16):
            model(balls(batch, rows, ball, ball + 1), cache=cache)
        rows = torch.tensor([2, 0, 0, 1])
        cut = cache.take_rows(rows)
        for start, stop in ((16, 19), (19, 20)):
            got = model(balls(batch, rows, start, stop), cache=cut).softmax(-1)
            assert (got - full[rows, start:stop]).abs().max().item() <= 1e-5
        one = SimulationCache(cfg.n_layers)
        model({name: t[:1] for name, t in batch.items()}, cache=one)
        seen, rows = torch.tensor([0, 1, 2]), torch.zeros(3, dtype=torch.long)
        shared = one.share_rows(seen)
        got = model(balls(batch, rows, seen, 5), cache=shared).softmax(-1)  # 3 balls each: to 3, 4 and 5
        want = torch.stack([full[0, s : s + 3] for s in seen.tolist()])
        assert (got - want).abs().max().item() <= 1e-5
        for step in range(14):  # one at a time, the rows' own balls past 16
            at = seen + 3 + step
            got = model(balls(batch, rows, at, int(at.max()) + 1), cache=shared).softmax(-1)[:, 0]
            assert (got - full[0, at]).abs().max().item() <= 1e-5


def test_a_step_reads_the_whole_buffer_only_of_the_keys_update_gave():
    """`whole` gives the buffers behind the keys and values `update` returned (16 balls for 5), and the keys
    and values themselves for any others (a copy, other rows): the fast step never reads a buffer it was not
    given."""
    cache = SimulationCache(1)
    k, v = torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 4)
    held_k, held_v = cache.update(0, k, v)
    keys, values = cache.whole(0, held_k, held_v)
    assert keys.shape == (3, 2, 16, 4) and torch.equal(keys[:, :, :5], k) and not keys[:, :, 5:].any()
    assert torch.equal(values[:, :, :5], v) and not values[:, :, 5:].any()
    for other in ((held_k.clone(), held_v.clone()), (held_k[1:], held_v[1:]), (held_k, held_v.clone())):
        assert all(a is b for a, b in zip(cache.whole(0, *other), other))
