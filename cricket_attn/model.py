"""A decoder-only transformer over the balls of an innings, with cricket-aware positions.

Position t holds what is known before ball t is bowled (the previous ball's outcome, who bats and
bowls, the match state) and predicts ball t's outcome; the causal mask keeps every later ball out.
Pure PyTorch: no Lightning, Hydra or MLflow here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Protocol

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from cricket_attn.laws import N_OUTCOMES, OUTCOME_INDEX

POSITIONAL_PARTS = ("absolute", "ball_in_over", "over", "phase", "batter_balls", "bowler_balls")
# The innings a ball belongs to: 0 the first, 1 the chase. The table has a third row, never read (super
# overs are not modelled): dropping it would change the random initialisation of every default model.
N_INNINGS_MARKERS = 3
NUMERIC_EMBEDDINGS = ("mlp", "bins")


class Cache(Protocol):
    """What the model asks of a KV cache (`cricket_attn.inference.kv_cache`, which stores what the model computes): the
    balls seen, a layer's keys and values appended, attention over them, the numeric embedding, and context
    from outside the innings encoded once."""

    contexts: dict[str, tuple[Tensor, ...]]

    def balls(self) -> Tensor | int: ...
    def update(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]: ...
    def attend(
        self, attention: CausalSelfAttention, layer: int, q: Tensor, k: Tensor, v: Tensor, weights
    ) -> Tensor: ...
    def embed_numeric(self, embedding: nn.Module, batch: dict[str, Tensor]) -> Tensor: ...


class ConfigError(ValueError):
    """A model setting that cannot work; the message names the setting."""


@dataclass
class ModelConfig:
    """The model's settings: the defaults are conf/model/transformer.yaml's (a test holds them equal); the
    sizes of the data (n_*, numeric_quantiles) come from the data encoder (`SequenceEncoder.model_dims`)."""

    n_numeric: int  # numeric features per ball (match state, player rates)
    n_batters: int  # vocabulary sizes, the unknown player (slot 0) included
    n_bowlers: int
    n_venues: int
    n_competitions: int  # what kind of match: competitions and team types, the unknown (slot 0) included
    n_team_types: int
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    mlp_ratio: int = 4
    dropout: float = 0.2  # on the embeddings and each block's output (not on the attention weights)
    entity_dropout: float = 0.3  # in training, replace this share of player/venue ids with the unknown (0)
    max_len: int = 160  # longest sequence the model accepts
    max_balls: int = 160  # size of the absolute legal-ball table
    max_overs: int = 24
    max_ball_in_over: int = 12
    max_player_balls: int = 64  # balls faced/bowled beyond this share the last slot
    positional_parts: tuple[str, ...] = POSITIONAL_PARTS
    positional_dim: int = 16  # width of each part; the parts are concatenated, then projected to d_model
    # Earlier balls (deliveries) each ball may attend to besides itself: null for all of the innings,
    # 0 for none (each ball sees only itself: the control that isolates what attention adds), 6 for the last six.
    context: int | None = None
    # Players' earlier matches: each ball also attends to its batter's and its bowler's last K balls of
    # earlier matches (given by the data encoder, `data.history_balls`); 0 for none.
    history_balls: int = 0
    history_age_buckets: int = 16  # how long ago a history ball was, in log2(days) buckets (given by the encoder)
    history_roles: tuple[str, ...] = ("batter", "bowler")  # whose histories the model reads (the data gives both)
    # The chase also attends to every ball of the first innings (given by the data encoder, `data.first_innings`).
    first_innings: bool = False
    numeric_embedding: str = "bins"  # "bins" (piecewise linear, then an MLP), or "mlp" over the raw features
    numeric_hidden: int | None = 256  # hidden width of the MLP into d_model (None: d_model)
    numeric_bins: int = 16  # bins: piecewise-linear pieces per feature, between training quantiles
    # bins: each feature's training quantiles at levels 0, 1/Q, ..., 1 (from the data encoder)
    numeric_quantiles: list[list[float]] | None = None
    n_classes: int = N_OUTCOMES
    temperature: float = 1.0  # divides the logits outside training; fitted on validation (calibration)
    wicket_offset: float = 0.0  # then added to the wicket's logit; fitted on validation with the temperature

    def __post_init__(self):
        self.positional_parts, self.history_roles = tuple(self.positional_parts), tuple(self.history_roles)
        for f in fields(self):  # types first, so that the rules below compare numbers
            value, kind = getattr(self, f.name), f.type.split(" | ")[0]
            wrong = kind in ("int", "float") and (isinstance(value, bool) or not isinstance(value, (int, float)))
            if (wrong and not (value is None and "None" in f.type)) or (kind == "int" and isinstance(value, float)):
                raise ConfigError(f"model.{f.name}={value!r}: must be {'an integer' if kind == 'int' else 'a number'}")
        q, bins, roles = self.numeric_quantiles, self.numeric_embedding == "bins", set(self.history_roles)
        rules = (  # (setting, holds, what is allowed), each checked once the ones before it hold
            *((f.name, lambda f=f: getattr(self, f.name) >= 1, "at least 1") for f in fields(self) if f.type == "int"
              and f.name != "history_balls"),
            ("d_model", lambda: self.d_model % self.n_heads == 0, f"divisible by model.n_heads={self.n_heads}"),
            ("positional_parts", lambda: set(self.positional_parts) <= set(POSITIONAL_PARTS), f"of {POSITIONAL_PARTS}"),
            ("positional_dim", lambda: self.positional_dim >= 1 and self.positional_dim % 2 == 0, "even, at least 2"),
            ("context", lambda: self.context is None or self.context >= 0, "null (all earlier balls) or at least 0"),
            ("history_balls", lambda: self.history_balls >= 0, "0 (none) or more"),
            ("history_roles", lambda: roles and roles <= {"batter", "bowler"}, "batter, bowler or both"),
            ("numeric_embedding", lambda: self.numeric_embedding in NUMERIC_EMBEDDINGS, f"one of {NUMERIC_EMBEDDINGS}"),
            ("numeric_hidden", lambda: self.numeric_hidden is None or self.numeric_hidden >= 1, "at least 1, or null"),
            ("numeric_quantiles", lambda: not bins or (q and len(q) == self.n_numeric), "one per feature, with bins"),
            ("numeric_bins", lambda: not bins or self.numeric_bins >= 1 and (len(q[0]) - 1) % self.numeric_bins == 0,
             "at least 1, dividing the quantile steps"),
            ("temperature", lambda: self.temperature > 0, "positive"),
            ("wicket_offset", lambda: math.isfinite(self.wicket_offset), "a finite number"),
            ("dropout", lambda: 0 <= self.dropout < 1, "in [0, 1)"),
            ("entity_dropout", lambda: 0 <= self.entity_dropout < 1, "in [0, 1)"),
        )  # fmt: skip
        for setting, holds, allowed in rules:
            if not holds():
                value = getattr(self, setting)
                value = list(value) if isinstance(value, tuple) else value
                raise ConfigError(f"model.{setting}={value!r}: must be {allowed}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["positional_parts"] = list(self.positional_parts)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"unknown model setting(s): {unknown}")
        return cls(**d)


# On a GPU, PyTorch's attention prefers cuDNN's kernel, which builds a plan for each new shape: on an NVIDIA H200
# 9-12 ms of CPU a call, forward or backward, as innings' lengths change from batch to batch, with the device busy
# 2 ms a step (benchmarks/train_step.py --profile, docs/log/2026-11-27.md). The flash and memory-efficient kernels
# need no plan. The CPU's kernels are not cuDNN's: its choice is left as it is, bit for bit.
GPU_ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def attention(q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
    """`F.scaled_dot_product_attention`, on a GPU without cuDNN's kernel (above)."""
    if not q.is_cuda:
        return F.scaled_dot_product_attention(q, k, v, **kwargs)
    with sdpa_kernel(GPU_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v, **kwargs)


def sinusoidal_table(n_positions: int, dim: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/dim)), PE(pos, 2i+1) = cos(pos / 10000^(2i/dim))."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]
    freq = torch.pow(10000.0, -torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    table = torch.zeros(n_positions, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table.float()


class CricketPositionalEncoding(nn.Module):
    """Where a ball sits in the innings: legal-ball index (fixed sinusoidal), ball in the over, over, phase,
    and how many balls the batter has faced and the bowler has bowled (learned), concatenated and projected."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.parts = cfg.positional_parts
        self.max_player_balls, players = cfg.max_player_balls, cfg.max_player_balls + 1
        sizes = {"ball_in_over": cfg.max_ball_in_over + 1, "over": cfg.max_overs, "phase": 3}
        sizes.update(batter_balls=players, bowler_balls=players)
        embed = {p: nn.Embedding(sizes[p], cfg.positional_dim) for p in self.parts if p != "absolute"}
        self.embed = nn.ModuleDict(embed)
        if "absolute" in self.parts:
            self.register_buffer("absolute", sinusoidal_table(cfg.max_balls, cfg.positional_dim), persistent=False)
        self.proj = nn.Linear(cfg.positional_dim * len(self.parts), cfg.d_model) if self.parts else None

    def forward(self, batch: dict[str, Tensor]) -> Tensor | float:
        if not self.parts:
            return 0.0
        out = []
        for part in self.parts:
            if part == "absolute":
                out.append(self.absolute[batch["legal_ball_index"]])
            elif part in ("batter_balls", "bowler_balls"):
                out.append(self.embed[part](batch[part].clamp(max=self.max_player_balls)))
            else:
                out.append(self.embed[part](batch[part]))
        return self.proj(torch.cat(out, dim=-1))  # (B, T, C)


def numeric_mlp(n_inputs: int, cfg: ModelConfig) -> nn.Sequential:
    hidden = cfg.numeric_hidden or cfg.d_model
    return nn.Sequential(nn.Linear(n_inputs, hidden), nn.GELU(), nn.Linear(hidden, cfg.d_model))


class PiecewiseLinearEmbedding(nn.Module):
    """Each numeric feature as its value plus one ramp per bin between training quantiles,
    clip((x - lower) / width, 0, 1), so the layer after it can bend the response at any quantile:
    a tree's sharp split (8 wickets down, the last over) becomes reachable for a smooth model
    (Gorishniy et al. 2022). A bin of no width (a discrete value many balls share) is a step up at that value."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        q = torch.tensor(cfg.numeric_quantiles, dtype=torch.float32)  # (F, Q + 1)
        edges = q[:, :: (q.size(1) - 1) // cfg.numeric_bins]  # (F, bins + 1)
        lower, width = edges[:, :-1], edges[:, 1:] - edges[:, :-1]
        # A bin of no width at value v is the step x >= v, with room for rounding below v.
        step = width < 1e-4
        lower, width = torch.where(step, lower - 1e-4, lower), torch.where(step, 1e-4, width)
        # ramp = x * scale + shift = (x - lower) / width
        self.register_buffer("scale", (1 / width).contiguous(), persistent=False)
        self.register_buffer("shift", (-lower / width).contiguous(), persistent=False)
        self.mlp = numeric_mlp(cfg.n_numeric * (cfg.numeric_bins + 1), cfg)

    def ramps(self, x: Tensor, start: int = 0) -> Tensor:
        """(..., k, bins): the ramps, clip((x - lower) / width, 0, 1), of features start, ..., start + k - 1
        at values x (..., k)."""
        k = x.size(-1)
        return torch.addcmul(self.shift[start : start + k], x[..., None], self.scale[start : start + k]).clamp_(0, 1)

    def first_layer(self, x: Tensor, start: int = 0) -> Tensor:
        """(..., hidden): the MLP's first layer's share, bias left out, of features start, ..., start + k - 1
        at values x (..., k). The layer reads each feature's [value, ramps...]; it is applied to the values
        and to the ramps separately, which spares copying both into one tensor."""
        first = self.mlp[0]
        w = first.weight.view(first.out_features, -1, self.scale.size(1) + 1)[:, start : start + x.size(-1)]
        return F.linear(x, w[:, :, 0]) + F.linear(self.ramps(x, start).flatten(-2), w[:, :, 1:].flatten(1))

    def forward(self, x: Tensor, rest: Tensor | None = None) -> Tensor:
        """x (B, T, F) -> (B, T, C). With `rest` (B, T, hidden), x holds only the first features and `rest`
        is the others' share (`first_layer`), computed beforehand for values that do not change (simulation)."""
        h = self.first_layer(x) + self.mlp[0].bias
        return self.mlp[1:](h if rest is None else h + rest)  # (B, T, C)


class CausalSelfAttention(nn.Module):
    """Each ball attends to itself and the earlier balls of its sequence (the last `context` of them
    when set); positions enter only as the input's encoding."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.context = cfg.context
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def mask(self, q_place: Tensor, k_place: Tensor, held: Tensor | None = None) -> Tensor:
        """What each query may see, from the places of queries (T,) or (B, T) and keys (S,) or (B, S) in
        their sequence and `held` (B, S), the keys that hold a ball of that row: (T, S) or (B, 1, T, S)."""
        q_place, k_place = q_place[..., :, None], k_place[..., None, :]
        allowed = k_place <= q_place
        if self.context is not None:
            allowed = allowed & (k_place >= q_place - self.context)
        if held is not None:
            allowed = allowed & held[:, None, :]
        return allowed[:, None] if allowed.dim() == 3 else allowed  # (B, 1, T, S) or (T, S)

    def forward(self, x: Tensor, cache: Cache | None, layer: int, weights: list | None = None) -> Tensor:
        """With a `weights` list, the attention weights (B, H, T, past + T) are computed explicitly and
        appended to it."""
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        if cache is None:
            y = self.attend(q, k, v, weights)
        else:
            k, v = cache.update(layer, k, v)  # (B, H, past + T, hd)
            y = cache.attend(self, layer, q, k, v, weights)
        return self.resid_dropout(self.out(y.transpose(1, 2).contiguous().view(B, T, C)))

    def attend(self, q: Tensor, k: Tensor, v: Tensor, weights: list | None = None) -> Tensor:
        """The queries of the last T balls (B, H, T, hd) over the keys and values of all S balls so far:
        (B, H, T, hd)."""
        T, S = q.size(2), k.size(2)
        past, mask = S - T, None
        if not ((past == 0 or T == 1) and self.context is None):
            places = torch.arange(S, device=q.device)
            mask = self.mask(places[past:], places)
        # No dropout on the weights: it cost IPL 2024 0.0006 and, on a CPU, takes the fused kernel away.
        if weights is not None:
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, S)
            if mask is None:
                mask = torch.ones(T, S, dtype=torch.bool, device=q.device).tril(past)
            w = scores.masked_fill(~mask, float("-inf")).softmax(-1)
            weights.append(w)
            return w @ v
        if mask is None:  # causal
            return attention(q, k, v, is_causal=T > 1)
        return attention(q, k, v, attn_mask=mask)


class ContextAttention(nn.Module):
    """Cross-attention from each ball to context balls from outside its innings: its batter's (or bowler's)
    last K balls of earlier matches, or, for the chase, the first innings. A context ball is its outcome, a
    player (through the model's player table: the bowler who bowled to a batter, the batter a bowler bowled
    to, a first-innings batter), its phase, when (log2 days ago, or the over) and its place. A learned
    "nothing" key lets a debutant's ball, or a first innings' ball, read nothing. The keys and values are
    computed once per innings and kept in the KV cache."""

    def __init__(self, cfg: ModelConfig, name: str, n_places: int, n_when: int):
        super().__init__()
        self.name, self.n_heads = name, cfg.n_heads
        self.outcome = nn.Embedding(N_OUTCOMES + 1, cfg.d_model)  # + an empty slot
        self.phase = nn.Embedding(3, cfg.d_model)
        self.when = nn.Embedding(n_when, cfg.d_model)
        self.place = nn.Embedding(n_places, cfg.d_model)
        self.ln_tokens = nn.LayerNorm(cfg.d_model)
        self.ln_ball = nn.LayerNorm(cfg.d_model)
        self.q = nn.Linear(cfg.d_model, cfg.d_model)
        self.kv = nn.Linear(cfg.d_model, 2 * cfg.d_model)
        self.none = nn.Parameter(torch.zeros(2, cfg.d_model))  # the "nothing" key and value
        self.out = nn.Linear(cfg.d_model, cfg.d_model)

    def keys_values(self, context: Tensor, players: nn.Embedding) -> tuple[Tensor, ...]:
        """(B, P, K, 4) context balls in P sets (one per player, or the one first innings) -> keys and values
        (B, H, P * (K + 1), hd), each set's "nothing" key first, and each key's set and whether it holds a
        ball, (B, P * (K + 1))."""
        outcome, player, phase, when = context.unbind(-1)
        empty = outcome < 0
        B, P, K = outcome.shape
        x = (
            self.outcome(outcome.masked_fill(empty, N_OUTCOMES))
            + players(player)
            + self.phase(phase)
            + self.when(when)
            + self.place(torch.arange(K, device=context.device))
        )  # (B, P, K, C)
        kv = torch.cat([self.none.view(1, 1, 1, -1).expand(B, P, 1, -1), self.kv(self.ln_tokens(x))], dim=2)
        hd = kv.size(-1) // 2 // self.n_heads
        k, v = kv.view(B, P * (K + 1), 2, self.n_heads, hd).permute(2, 0, 3, 1, 4)  # each (B, H, P * (K + 1), hd)
        owner = torch.arange(P, device=context.device).repeat_interleave(K + 1).expand(B, -1)
        seen = torch.cat([torch.ones_like(empty[..., :1]), ~empty], dim=-1).view(B, P * (K + 1))
        return k, v, owner, seen

    def forward(
        self,
        x: Tensor,
        context: Tensor,
        slot: Tensor,
        players: nn.Embedding,
        cache: Cache | None = None,
        weights: list | None = None,
    ):
        """x (B, T, C), context (B, P, K, 4), slot (B, T): each ball's set among the P -> (B, T, C).
        All sets' keys form one sequence; a mask keeps each ball to its own set's. With a `weights` list,
        the attention weights (B, H, T, P * (K + 1)) are computed explicitly and appended to it."""
        B, T, C = x.shape
        if cache is not None and self.name in cache.contexts:
            parts = cache.contexts[self.name]
        else:
            parts = self.keys_values(context, players)
            if cache is not None:
                cache.contexts[self.name] = parts
        k, v, owner, seen = parts
        mask = (slot[:, :, None] == owner[:, None, :]) & seen[:, None, :]  # (B, T, P * (K + 1))
        q = self.q(self.ln_ball(x)).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)  # (B, H, T, hd)
        if k.size(0) == 1 < B:  # one context every row shares (simulations of one innings): one row of B * T balls
            q, mask = q.transpose(0, 1).reshape(1, self.n_heads, B * T, -1), mask.reshape(1, B * T, -1)
            y = attention(q, k, v, attn_mask=mask[:, None])
            return self.out(y.view(self.n_heads, B, T, -1).permute(1, 2, 0, 3).reshape(B, T, C))
        if weights is not None:
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, P * (K + 1))
            w = scores.masked_fill(~mask[:, None], float("-inf")).softmax(-1)
            weights.append(w)
            return self.out((w @ v).transpose(1, 2).reshape(B, T, C))
        y = attention(q, k, v, attn_mask=mask[:, None])
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.proj(F.gelu(self.fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)

    def forward(self, x: Tensor, cache: Cache | None, layer: int, weights: list | None = None) -> Tensor:
        x = x + self.attn(self.ln1(x), cache, layer, weights)
        return x + self.mlp(self.ln2(x))


class CricketTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.prev_outcome = nn.Embedding(N_OUTCOMES + 1, cfg.d_model)  # + start of innings
        self.innings_marker = nn.Embedding(N_INNINGS_MARKERS, cfg.d_model)
        self.batter = nn.Embedding(cfg.n_batters, cfg.d_model)
        self.bowler = nn.Embedding(cfg.n_bowlers, cfg.d_model)
        self.venue = nn.Embedding(cfg.n_venues, cfg.d_model)
        # The competition's and the team type's offsets, learnt from zero and decayed towards it: one never
        # seen in training (slot 0, unless small competitions shared it) adds nothing.
        self.competition = nn.Parameter(torch.zeros(cfg.n_competitions, cfg.d_model))
        self.team_type = nn.Parameter(torch.zeros(cfg.n_team_types, cfg.d_model))
        if cfg.numeric_embedding == "bins":
            self.numeric = PiecewiseLinearEmbedding(cfg)
        else:
            self.numeric = numeric_mlp(cfg.n_numeric, cfg)
        self.position = CricketPositionalEncoding(cfg)
        if cfg.history_balls:
            for role in cfg.history_roles:
                name = f"{role}_history"
                setattr(self, name, ContextAttention(cfg, name, cfg.history_balls, cfg.history_age_buckets))
        if cfg.first_innings:
            self.first_innings = ContextAttention(cfg, "first_innings", cfg.max_len, cfg.max_overs)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)
        shift = torch.zeros(cfg.n_classes)
        shift[OUTCOME_INDEX["wicket"]] = cfg.wicket_offset
        self.register_buffer("calibration_shift", shift, persistent=False)  # from the config, not the weights
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def _entity(self, emb: nn.Embedding, ids: Tensor) -> Tensor:
        if self.training and self.cfg.entity_dropout > 0:
            ids = ids.masked_fill(torch.rand(ids.shape, device=ids.device) < self.cfg.entity_dropout, 0)
        return emb(ids)

    def forward(
        self,
        batch: dict[str, Tensor],
        cache: Cache | None = None,
        last_only=False,
        attention=None,
        reading: dict | None = None,
    ) -> Tensor:
        """Logits over the outcome classes: (B, T, n_classes), or (B, 1, n_classes) with `last_only`.
        Training sees the raw logits; evaluation and inference see them divided by the temperature, with
        the wicket offset added to the wicket's (the calibration).
        With an `attention` list, each layer's attention weights (B, H, T, past + T) are appended to it;
        with a `reading` dict, each history reader's (`batter_history`, `bowler_history`: B, H, T,
        players * (K + 1)) is put in it under its name."""
        T = batch["prev_outcome"].size(1)
        past = 0 if cache is None else int(torch.as_tensor(cache.balls()).max())
        if past + T > self.cfg.max_len:
            raise ValueError(f"sequence of {past + T} balls is longer than model.max_len={self.cfg.max_len}")
        numeric = self.numeric(batch["numeric"]) if cache is None else cache.embed_numeric(self.numeric, batch)
        x = (
            self.prev_outcome(batch["prev_outcome"])
            + self.innings_marker(batch["innings_marker"])
            + self._entity(self.batter, batch["batter"])
            + self._entity(self.bowler, batch["bowler"])
            + self._entity(self.venue, batch["venue"])
            + numeric
            + self.position(batch)
        )  # (B, T, C)
        x = x + F.embedding(batch["competition"], self.competition) + F.embedding(batch["team_type"], self.team_type)
        if self.cfg.history_balls:  # a batter's history is of balls bowled at him, and the other way round
            opponent, read = {"batter": self.bowler, "bowler": self.batter}, x
            for role in self.cfg.history_roles:
                name, held = f"{role}_history", None if reading is None else []
                x = x + getattr(self, name)(read, batch[name], batch[f"{role}_slot"], opponent[role], cache, held)
                if held:
                    reading[name] = held[0]
        if self.cfg.first_innings:
            x = x + self.first_innings(x, batch["first_innings"], batch["first_innings_slot"], self.batter, cache)
        x = self.drop(x)
        for i, block in enumerate(self.blocks):
            x = block(x, cache, i, attention)
        if last_only:
            x = x[:, -1:, :]  # the next ball's prediction comes from the last position
        logits = self.head(self.ln_f(x))
        if self.training:
            return logits
        return logits / self.cfg.temperature + self.calibration_shift


class Ensemble(nn.Module):
    """Models trained alike from different seeds, predicting the mean of their distributions. Returns
    log-probabilities, so whatever takes a softmax of a model's output gets that mean. Incremental
    inference takes one KV cache per member."""

    def __init__(self, members: list[CricketTransformer]):
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, batch: dict[str, Tensor], cache: list[Cache] | None = None, last_only: bool = False) -> Tensor:
        caches = cache if cache is not None else [None] * len(self.members)
        log_probs = torch.stack([m(batch, c, last_only).log_softmax(-1) for m, c in zip(self.members, caches)])
        return torch.logsumexp(log_probs, dim=0) - math.log(len(self.members))
