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
