"""The model's KV cache, for ball-by-ball inference, and the simulator's: many simulations of one innings.

`KVCache` keeps each layer's keys and values of the balls seen so far. `SimulationCache` holds the real
balls before a state once for every simulation from it (`SharedBalls`), and takes the players' rates,
fixed within an innings, through tables made once per innings (`keep_rates`). Every step reproduces a
full pass of the model (tests/inference/test_kv_cache.py, tests/test_model.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch import Tensor

from cricket_attn.model import CausalSelfAttention, CricketTransformer, PiecewiseLinearEmbedding

# A cache's buffers grow this many balls at a time (see `KVCache.update`).
BLOCK = 16


class KVCache:
    """Keys and values of the balls seen so far, one pair per layer. A cache that keeps some balls or inputs
    elsewhere (`SimulationCache`) does its own `attend` and `embed_numeric`."""

    def __init__(self, n_layers: int):
        self.keys: list[Tensor | None] = [None] * n_layers  # each (B, H, balls, hd)
        self.values: list[Tensor | None] = [None] * n_layers
        self._buffers: list[tuple[Tensor, Tensor] | None] = [None] * n_layers  # with room to grow
        self.contexts: dict[str, tuple[Tensor, ...]] = {}  # context from outside the innings, encoded once

    @property
    def length(self) -> int:
        """The balls each row holds in `keys` and `values`."""
        return 0 if self.keys[0] is None else self.keys[0].size(2)

    def balls(self) -> Tensor | int:
        """The balls each row has seen."""
        return self.length

    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append the new balls' keys and values (B, H, T, hd); returns all of them. They are written into
        zeroed buffers that grow BLOCK balls at a time, so a step copies only its own ball, not the whole cache,
        and a buffer is never more than BLOCK - 1 balls longer than what it holds (`attend` reads it whole)."""
        used, T = (0 if self.keys[layer] is None else self.keys[layer].size(2)), k.size(2)
        buffers = self._buffers[layer]
        if buffers is None or buffers[0].size(2) < used + T:
            size = -(-(used + T) // BLOCK) * BLOCK
            buffers = tuple(new.new_zeros(*new.shape[:2], size, new.size(3)) for new in (k, v))
            if used:
                buffers[0][:, :, :used], buffers[1][:, :, :used] = self.keys[layer], self.values[layer]
            self._buffers[layer] = buffers
        buffers[0][:, :, used : used + T], buffers[1][:, :, used : used + T] = k, v
        self.keys[layer], self.values[layer] = buffers[0][:, :, : used + T], buffers[1][:, :, : used + T]
        return self.keys[layer], self.values[layer]

    def attend(self, attention: CausalSelfAttention, layer: int, q: Tensor, k: Tensor, v: Tensor, weights) -> Tensor:
        """Layer `layer`'s attention of the new balls' queries over every ball held (`k`, `v` from `update`).
        One new ball that sees every ball held (the simulator's step) on a CPU reads the whole buffer, its
        empty tail masked: a slice of the buffer is strided between rows, and the matrix products over it take
        a slower path than over one contiguous block (a match before the toss, `benchmarks/simulate_speed.py
        --before-only`: 8.5-9.0 s against 10.6-11.6 s, alternated; the record of 2026-11-29). A full pass's
        predictions to 1e-5 (tests/test_model.py), not to the last bit: a draw may fall the other way."""
        if q.size(2) > 1 or weights is not None or attention.context is not None or q.is_cuda:
            return attention.attend(q, k, v, weights)
        keys, values = self.whole(layer, k, v)
        scores = q @ keys.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, 1, buffer)
        scores[..., k.size(2) :] = float("-inf")  # the tail holds no ball (zeros: a weight of 0 reads 0)
        return scores.softmax(-1) @ values

    def whole(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Layer `layer`'s whole buffers, where `k`, `v` are their first balls (as `update` returns them); else
        `k`, `v` themselves."""
        buffers = self._buffers[layer]
        if buffers is None or any(
            x.data_ptr() != b.data_ptr() or x.shape[:2] != b.shape[:2] for x, b in zip((k, v), buffers)
        ):
            return k, v
        return buffers

    def embed_numeric(self, embedding: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        return embedding(batch["numeric"])


@dataclass
class SharedBalls:
    """Balls many rows of a cache have in common (the real balls before a state), held once: per layer
    their keys and values (H, S, hd), and for each row how many of them, from the first, it has seen (B,)."""

    keys: list[Tensor]
    values: list[Tensor]
    seen: Tensor


class SimulationCache(KVCache):
    """A KV cache whose rows are simulations of one innings: each row's balls may begin with `shared` ones,
    and its own follow; `rates` hold the batting slots', bowling slots' and venue's share of the numeric
    layer, so a batch carries the match state alone and `rate_slots` (B, T, 2): the striker's and the
    bowler's slots."""

    def __init__(self, n_layers: int):
        super().__init__(n_layers)
        self.shared: SharedBalls | None = None
        self.rates: tuple[Tensor, ...] | None = None

    def balls(self) -> Tensor | int:
        """The balls each row has seen: (B,) with shared balls, else the length."""
        return self.length if self.shared is None else self.shared.seen + self.length

    def attend(self, attention: CausalSelfAttention, layer: int, q: Tensor, k: Tensor, v: Tensor, weights) -> Tensor:
        if self.shared is None:
            return super().attend(attention, layer, q, k, v, weights)
        if weights is not None:
            raise ValueError("attention weights come from a cache without shared balls")
        keys, values = self.whole(layer, k, v)  # see `KVCache.attend`: the tail is masked as a later ball
        return attend_shared(attention, q, keys, values, k.size(2), self.shared, layer)

    def embed_numeric(self, embedding: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        if "rate_slots" not in batch:
            return super().embed_numeric(embedding, batch)
        batter, bowler, *match = self.rates  # (slots, hidden), (slots, hidden), then (hidden,) each
        striker, bowling = batch["rate_slots"].unbind(-1)
        return embedding(batch["numeric"], batter[striker] + bowler[bowling] + sum(match))

    def keep_rates(self, model: CricketTransformer, rates: list[tuple[int, Tensor]]) -> bool:
        """Given every batting slot's (slots, k), every bowling slot's and the match's own (k,) standardised
        rates, each with the place of its first feature among the model's numeric features, keep their
        share of the numeric layer. False (nothing kept) for a numeric layer that cannot be split."""
        if not isinstance(model.numeric, PiecewiseLinearEmbedding):
            return False
        self.rates = tuple(model.numeric.first_layer(values, start) for start, values in rates)
        return True

    def take_rows(self, index: Tensor) -> SimulationCache:
        """These rows, in this order; an index may repeat a row. Shared balls stay shared, and so does a
        context of one row (every row's)."""
        out = self._copy(lambda x: x[index], lambda x: x if x.size(0) == 1 else x[index])
        if self.shared is not None:
            out.shared = SharedBalls(self.shared.keys, self.shared.values, self.shared.seen[index])
        return out

    def share_rows(self, seen: Tensor) -> SimulationCache:
        """From a one-row cache, one row per entry of `seen` (R,), each row the cache as it was after that
        many balls; the balls are held once, not copied per row (one innings, many simulations)."""
        if self.keys[0] is None or self.keys[0].size(0) != 1 or self.shared is not None:
            raise ValueError("share_rows() takes a cache of one row of balls of its own")
        out = self._copy(lambda x: x[:, :, :0].expand(len(seen), -1, -1, -1), lambda x: x)  # the context stays one row
        out.shared = SharedBalls([k[0] for k in self.keys], [v[0] for v in self.values], seen)
        return out

    def _copy(self, per_layer: Callable, context: Callable) -> SimulationCache:
        out = SimulationCache(len(self.keys))
        out.keys = [None if k is None else per_layer(k) for k in self.keys]
        out.values = [None if v is None else per_layer(v) for v in self.values]
        out.contexts = {name: tuple(context(x) for x in parts) for name, parts in self.contexts.items()}
        out.rates = self.rates
        return out


def attend_shared(
    attention: CausalSelfAttention, q: Tensor, k: Tensor, v: Tensor, own: int, shared: SharedBalls, layer: int
) -> Tensor:
    """Attention over a row's first `seen` shared balls and its own `own` (the first of `k`, `v`: (B, H, own
    or more, hd); any after them are later than every query, so the causal mask leaves them out): the shared
    keys and values are read once for all rows, as one matrix product per head, not once per row; the two
    parts' scores join in one softmax. (B, H, T, hd)."""
    B, H, T, hd = q.shape
    S, held_own = shared.keys[layer].size(1), k.size(2)
    flat = q.transpose(0, 1).reshape(H, B * T, hd)
    scores = torch.cat(
        [(flat @ shared.keys[layer].transpose(1, 2)).view(H, B, T, S).transpose(0, 1), q @ k.transpose(-2, -1)], dim=-1
    ) / math.sqrt(hd)  # (B, H, T, S + held_own)
    seen, places = shared.seen[:, None], torch.arange(max(S, held_own), device=q.device)
    k_place = torch.cat([places[:S].expand(B, S), seen + places[:held_own]], dim=1)
    held = torch.cat([places[:S] < seen, torch.ones(B, held_own, dtype=torch.bool, device=q.device)], dim=1)
    mask = attention.mask(seen + places[own - T : own], k_place, held)
    w_shared, w_own = scores.masked_fill(~mask, float("-inf")).softmax(-1).split([S, held_own], dim=-1)
    from_shared = (w_shared.transpose(0, 1).reshape(H, B * T, S) @ shared.values[layer]).view(H, B, T, hd)
    return from_shared.transpose(0, 1) + w_own @ v
