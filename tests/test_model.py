"""The model: positional encoding values, config validation, causality and the KV cache."""

from __future__ import annotations

import math

import pytest
import torch

from cricket_attn.inference.kv_cache import KVCache
from cricket_attn.model import (
    POSITIONAL_PARTS,
    ConfigError,
    CricketPositionalEncoding,
    CricketTransformer,
    Ensemble,
    ModelConfig,
    PiecewiseLinearEmbedding,
    sinusoidal_table,
)

TINY = dict(
    n_numeric=5, n_batters=7, n_bowlers=6, n_venues=3, n_competitions=3, n_team_types=2, d_model=8, n_heads=2,
    n_layers=2, dropout=0.0,
    entity_dropout=0.0, numeric_embedding="mlp", numeric_hidden=None,
)  # fmt: skip
# Quantiles at levels 0, 1/4, ..., 1 for each of TINY's five features.
QUANTILES = [[-2.0, -0.5, 0.0, 0.5, 2.0]] * 4 + [[0.0, 0.0, 0.0, 1.0, 1.0]]


def random_batch(cfg: ModelConfig, B: int = 3, T: int = 20, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    r = lambda high: torch.randint(0, high, (B, T), generator=g)
    # Legal-ball indexes as in an innings: a wide or no-ball (one in five here) does not move it on.
    legal = (torch.rand(B, T, generator=g) > 0.2).long().cumsum(1) - 1
    batch = {
        "prev_outcome": r(11),
        "innings_marker": r(2),
        "batter": r(cfg.n_batters),
        "bowler": r(cfg.n_bowlers),
        "venue": r(cfg.n_venues),
        "competition": r(cfg.n_competitions),
        "team_type": r(cfg.n_team_types),
        "numeric": torch.randn(B, T, cfg.n_numeric, generator=g),
        "legal_ball_index": legal.clamp(min=0),
        "ball_in_over": r(7),
        "over": r(20),
        "phase": r(3),
        "batter_balls": r(90),
        "bowler_balls": r(24),
    }
    if cfg.history_balls:  # 4 players a side, each with some history balls, the oldest slots empty
        for role, opponents in (("batter", cfg.n_bowlers), ("bowler", cfg.n_batters)):
            K, P = cfg.history_balls, 4
            h = lambda high, K=K, P=P: torch.randint(0, high, (B, P, K), generator=g)
            history = torch.stack([h(10), h(opponents), h(3), h(16)], dim=-1)
            have = torch.randint(0, K + 1, (B, P, 1), generator=g)
            history[..., 0] = history[..., 0].masked_fill(torch.arange(K) < K - have, -1)
            batch[f"{role}_history"], batch[f"{role}_slot"] = history, r(P)
    if cfg.first_innings:  # the first innings as context: 15 balls, the chases (marker 1) only
        K = 15
        h = lambda high: torch.randint(0, high, (B, 1, K), generator=g)
        first = torch.stack([h(10), h(cfg.n_batters), h(3), h(20)], dim=-1)
        first[..., 0] = first[..., 0].masked_fill(batch["innings_marker"][:, :1, None] == 0, -1)
        batch["first_innings"], batch["first_innings_slot"] = first, torch.zeros(B, T, dtype=torch.long)
    return batch


# Each way attention can see the innings: windows, the ball itself only, no positions, context from outside it.
ATTENTION_VARIANTS = [
    dict(),
    dict(context=0),
    dict(context=3),
    dict(positional_parts=()),
    dict(history_balls=6),
    dict(history_balls=6, history_roles=["bowler"]),
    dict(first_innings=True),
]


def test_sinusoidal_values_match_the_formula():
    d = 16
    table = sinusoidal_table(200, d)
    for pos in (0, 1, 7, 119, 199):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_positional_parts_are_switchable():
    for parts in (POSITIONAL_PARTS, ("absolute",), ("over", "phase"), ()):
        cfg = ModelConfig(**TINY, positional_parts=parts)
        pe = CricketPositionalEncoding(cfg)
        out = pe(random_batch(cfg))
        assert (out == 0.0) if not parts else out.shape == (3, 20, 8)
    # Without the batter part, changing balls faced changes nothing.
    cfg = ModelConfig(**TINY, positional_parts=("absolute", "over"))
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    other = dict(batch, batter_balls=batch["batter_balls"] + 5)
    assert torch.equal(model(batch), model(other))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(d_model=10, n_heads=4), "model.d_model=10: must be divisible by model.n_heads=4"),
        (dict(n_heads=0), "model.n_heads=0: must be at least 1"),
        (dict(d_model=-16), "model.d_model=-16: must be at least 1"),
        (dict(d_model="abc"), "model.d_model='abc': must be an integer"),
        (dict(n_layers=2.5), "model.n_layers=2.5: must be an integer"),
        (dict(dropout="high"), "model.dropout='high': must be a number"),
        (dict(max_len=True), "model.max_len=True: must be an integer"),
        (dict(positional_parts=("absolute", "moon_phase")), r"model.positional_parts=\['absolute', 'moon_phase'\]"),
        (dict(positional_dim=7), "model.positional_dim=7: must be even"),
        (dict(temperature=0.0), "model.temperature=0.0: must be positive"),
        (dict(numeric_embedding="spline"), r"model.numeric_embedding='spline': must be one of \('mlp', 'bins'\)"),
        (dict(numeric_embedding="periodic"), "model.numeric_embedding='periodic': must be one of"),
        (dict(numeric_hidden=0), "model.numeric_hidden=0: must be at least 1, or null"),
        (dict(numeric_embedding="bins"), "model.numeric_quantiles=None: must be one per feature, with bins"),
        (dict(numeric_embedding="bins", numeric_bins=3, numeric_quantiles=QUANTILES), "model.numeric_bins=3: must be"),
        (dict(numeric_embedding="bins", numeric_bins=2, numeric_quantiles=QUANTILES[:4]), "model.numeric_quantiles"),
        (dict(n_venues=0), "model.n_venues=0: must be at least 1"),
        (dict(context=-1), "model.context=-1: must be null"),
        (dict(history_balls=-3), "model.history_balls=-3: must be 0"),
        (dict(entity_dropout=1.0), r"model.entity_dropout=1.0: must be in \[0, 1\)"),
    ],
)
def test_bad_config_names_the_setting(change, message):
    with pytest.raises(ConfigError, match=message):
        ModelConfig(**{**TINY, **change})
    with pytest.raises(ConfigError, match="unknown model setting"):
        ModelConfig.from_dict({**TINY, "d_modle": 8})


def test_sequence_longer_than_the_model_allows():
    cfg = ModelConfig(**TINY, max_len=16)
    with pytest.raises(ValueError, match="longer than model.max_len=16"):
        CricketTransformer(cfg)(random_batch(cfg, T=20))


@pytest.mark.parametrize("variant", ATTENTION_VARIANTS)
def test_later_balls_never_change_earlier_predictions(variant):
    cfg = ModelConfig(**{**TINY, **variant})
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    k = 11
    changed = {name: t.clone() for name, t in batch.items()}
    for name in changed:  # everything from position k + 1 on
        if name == "numeric":
            changed[name][:, k + 1 :] = torch.randn_like(changed[name][:, k + 1 :])
        else:
            changed[name][:, k + 1 :] = torch.flip(changed[name][:, k + 1 :], dims=[1])
    a, b = model(batch), model(changed)
    assert torch.equal(a[:, : k + 1], b[:, : k + 1])
    assert not torch.allclose(a[:, k + 1 :], b[:, k + 1 :])


@pytest.mark.parametrize(
    "variant", [*ATTENTION_VARIANTS, dict(numeric_embedding="bins", numeric_bins=2, numeric_quantiles=QUANTILES)]
)
@pytest.mark.parametrize("chunks", [[1] * 20, [5, 1, 1, 13], [20]])
def test_kv_cache_matches_a_full_forward_pass(chunks, variant):
    torch.manual_seed(0)
    cfg = ModelConfig(**{**TINY, "d_model": 16, "n_layers": 3, **variant})
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    with torch.no_grad():
        full = model(batch).softmax(-1)
        cache, start, parts = KVCache(cfg.n_layers), 0, []
        for size in chunks:
            step = {
                name: t if name.endswith("_history") or name == "first_innings" else t[:, start : start + size]
                for name, t in batch.items()
            }
            parts.append(model(step, cache=cache).softmax(-1))
            start += size
        last = model(batch, last_only=True).softmax(-1)
    incremental = torch.cat(parts, dim=1)
    assert (incremental - full).abs().max().item() <= 1e-5
    assert cache.length == 20
    assert torch.allclose(last[:, 0], full[:, -1], atol=1e-6)


def test_the_calibration_moves_the_logits_outside_training_only():
    from cricket_attn.laws import OUTCOME_INDEX

    torch.manual_seed(0)
    plain = CricketTransformer(ModelConfig(**TINY))
    hot = CricketTransformer(ModelConfig(**TINY, temperature=2.0, wicket_offset=-0.1))
    hot.load_state_dict(plain.state_dict())  # the offset is the config's, not a weight
    batch = random_batch(plain.cfg)
    shift = torch.zeros(plain.cfg.n_classes)
    shift[OUTCOME_INDEX["wicket"]] = -0.1
    with torch.no_grad():
        assert torch.allclose(hot.eval()(batch), plain.eval()(batch) / 2.0 + shift, atol=1e-6)
        assert torch.equal(hot.train()(batch), plain.train()(batch))  # dropout is 0 in TINY


def test_piecewise_linear_ramps_between_quantiles():
    torch.manual_seed(0)
    cfg = ModelConfig(**{**TINY, "numeric_embedding": "bins"}, numeric_bins=2, numeric_quantiles=QUANTILES)
    emb = PiecewiseLinearEmbedding(cfg)
    # Two bins from the quantiles at 0, 1/2 and 1: [-2, 0] and [0, 2] for features 0-3, [0, 0] and [0, 1]
    # for the discrete feature 4, whose first bin has no width and so is a step at 0.
    x = torch.tensor([[[-3.0, -1.0, 0.5, 2.5, 0.0]]])
    expected = [[0.0, 0.0], [0.5, 0.0], [1.0, 0.25], [1.0, 1.0], [1.0, 0.0]]
    assert torch.allclose(emb.ramps(x)[0, 0], torch.tensor(expected))
    # The MLP reads each feature's value and ramps, in that order.
    x = torch.randn(3, 7, 5)
    inputs = torch.cat([x[..., None], emb.ramps(x)], dim=-1).flatten(-2)  # (B, T, 5 * 3)
    assert torch.allclose(emb(x), emb.mlp(inputs), atol=1e-6)


@pytest.mark.parametrize(
    "numeric",
    [
        dict(numeric_hidden=12),
        dict(numeric_embedding="bins", numeric_bins=4, numeric_quantiles=QUANTILES, numeric_hidden=12),
    ],
)
def test_numeric_embeddings_are_causal_and_cacheable(numeric):
    torch.manual_seed(0)
    cfg = ModelConfig(**{**TINY, **numeric})
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    changed = dict(batch, numeric=batch["numeric"].clone())
    changed["numeric"][:, 9:] += 1.0
    with torch.no_grad():
        a, b = model(batch), model(changed)
        cache = KVCache(cfg.n_layers)
        steps = [model({k: t[:, i : i + 1] for k, t in batch.items()}, cache=cache) for i in range(20)]
    assert torch.equal(a[:, :9], b[:, :9]) and not torch.allclose(a[:, 9:], b[:, 9:])
    assert (torch.cat(steps, dim=1).softmax(-1) - a.softmax(-1)).abs().max().item() <= 1e-5
    first = model.numeric.mlp[0] if numeric.get("numeric_embedding") == "bins" else model.numeric[0]
    assert first.out_features == numeric["numeric_hidden"]


def test_ensemble_predicts_the_mean_distribution_and_caches_per_member():
    cfg = ModelConfig(**TINY)
    members = []
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        members.append(CricketTransformer(cfg).eval())
    ensemble = Ensemble(members).eval()
    batch = random_batch(cfg)
    with torch.no_grad():
        full = ensemble(batch).softmax(-1)
        mean = torch.stack([m(batch).softmax(-1) for m in members]).mean(0)
        caches = [KVCache(cfg.n_layers) for _ in members]
        steps = [ensemble({k: t[:, i : i + 1] for k, t in batch.items()}, cache=caches) for i in range(20)]
        last = ensemble(batch, last_only=True).softmax(-1)
    assert (full - mean).abs().max().item() <= 1e-6
    assert not torch.allclose(mean, members[0](batch).softmax(-1), atol=1e-3)  # the members differ
    assert (torch.cat(steps, dim=1).softmax(-1) - full).abs().max().item() <= 1e-5
    assert torch.allclose(last[:, 0], full[:, -1], atol=1e-6)


@pytest.mark.parametrize("context", [0, 2, None])
def test_context_limits_what_each_ball_sees(context):
    """One layer: changing ball k moves the predictions of balls k .. k + context only (all later with null)."""
    torch.manual_seed(0)
    cfg = ModelConfig(**{**TINY, "n_layers": 1, "context": context, "positional_parts": ()})
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    k = 8
    changed = dict(batch, batter=batch["batter"].clone())
    changed["batter"][:, k] = (changed["batter"][:, k] + 1) % cfg.n_batters
    with torch.no_grad():
        moved = (model(batch) - model(changed)).abs().amax(-1) > 1e-6  # (B, T)
    last = 19 if context is None else k + context
    assert moved[:, k : last + 1].all() and not moved[:, :k].any() and not moved[:, last + 1 :].any()


@pytest.mark.parametrize("variant", ATTENTION_VARIANTS)
def test_attention_weights_are_those_the_model_uses(variant):
    """The explicit weights give the same predictions as the fused kernel; each row is a distribution
    over the ball itself and the earlier balls its context allows."""
    torch.manual_seed(0)
    cfg = ModelConfig(**{**TINY, **variant})
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    weights = []
    with torch.no_grad():
        plain, explained = model(batch), model(batch, attention=weights)
    assert torch.allclose(plain, explained, atol=1e-5)
    assert len(weights) == cfg.n_layers and weights[0].shape == (3, cfg.n_heads, 20, 20)
    query, key = torch.arange(20)[:, None], torch.arange(20)[None, :]
    allowed = (key <= query) & (key >= query - (cfg.context if cfg.context is not None else 20))
    for w in weights:
        assert torch.allclose(w.sum(-1), torch.ones(3, cfg.n_heads, 20))
        assert (w[..., ~allowed] == 0).all()


def test_player_history_reaches_its_own_players_balls_only():
    """A change to one batter's history moves the balls he faces (and, through attention, later balls)
    and no ball before his first; an empty history reads only the "no history" value."""
    torch.manual_seed(0)
    cfg = ModelConfig(**TINY, history_balls=6)
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    changed = dict(batch, batter_history=batch["batter_history"].clone())
    changed["batter_history"][:, 2, :, 0] = 4  # batter slot 2: every history ball a four
    with torch.no_grad():
        moved = (model(batch) - model(changed)).abs().amax(-1) > 1e-6
    his = batch["batter_slot"] == 2
    for b in range(3):
        first = int(his[b].float().argmax())
        assert his[b].any() and moved[b, his[b]].all() and not moved[b, :first].any()
    with torch.no_grad():
        empty = batch["batter_history"].clone()
        empty[..., 0] = -1
        x = torch.randn(3, 20, cfg.d_model)
        out = model.batter_history(x, empty, batch["batter_slot"], model.bowler)
        none_value = model.batter_history.out(model.batter_history.none[1].expand(3, 20, -1))
    assert torch.allclose(out, none_value, atol=1e-6)


def test_history_roles_read_only_their_own_histories():
    """With one role, the other role's history changes nothing and has no weights; with none, refused."""
    torch.manual_seed(0)
    cfg = ModelConfig(**TINY, history_balls=6, history_roles=["batter"])
    model = CricketTransformer(cfg).eval()
    assert hasattr(model, "batter_history") and not hasattr(model, "bowler_history")
    batch = random_batch(cfg)
    bowlers = dict(batch, bowler_history=batch["bowler_history"].clone())
    bowlers["bowler_history"][..., 0] = 4
    batters = dict(batch, batter_history=batch["batter_history"].clone())
    batters["batter_history"][..., 0] = 4
    with torch.no_grad():
        assert torch.equal(model(batch), model(bowlers)) and not torch.equal(model(batch), model(batters))
    for roles in ([], ["batter", "keeper"]):
        with pytest.raises(ConfigError, match="model.history_roles"):
            ModelConfig(**TINY, history_balls=6, history_roles=roles)


def test_first_innings_reaches_the_chase_only():
    torch.manual_seed(0)
    cfg = ModelConfig(**TINY, first_innings=True)
    model = CricketTransformer(cfg).eval()
    batch = random_batch(cfg)
    chase = batch["first_innings"][:, 0, :, 0].ge(0).any(-1)  # (B,): sequences with a first innings to read
    assert chase.any() and (~chase).any()
    changed = dict(batch, first_innings=batch["first_innings"].clone())
    changed["first_innings"][..., 1] = (changed["first_innings"][..., 1] + 1) % cfg.n_batters  # other batters
    with torch.no_grad():
        moved = (model(batch) - model(changed)).abs().amax(-1) > 1e-6  # (B, T)
    assert moved[chase].all() and not moved[~chase].any()
