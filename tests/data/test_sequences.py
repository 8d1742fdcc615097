"""Sequences from real matches: what a position may see, vocabularies, padding and the encoder's state."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from cricket_attn.data.batches import IGNORE, BucketBatchSampler
from cricket_attn.data.features import entity_key, match_state
from cricket_attn.data.sequences import ENCODER_KEYS, QUANTILE_STEPS, UNK, SequenceEncoder, Vocab
from cricket_attn.data.splits import SeasonSplit
from cricket_attn.laws import N_OUTCOMES, START_OF_INNINGS
from cricket_attn.model import CricketTransformer, ModelConfig


@pytest.fixture(scope="module")
def parts(data_config, deliveries):
    return SeasonSplit.from_config(data_config.split).split(deliveries)


@pytest.fixture(scope="module")
def encoder(parts):
    return SequenceEncoder.fit(parts["train"], min_count=5)


def test_positions_line_up_with_deliveries(encoder, parts):
    test = parts["test"]
    seqs = encoder.encode(test)
    regular = test[~test["is_super_over"]]
    assert len(seqs) == regular.groupby(["match_id", "innings"]).ngroups
    t = seqs.tensors
    rows = t["row"][t["mask"]].numpy()
    assert sorted(rows) == sorted(regular.index)
    # Position t's label is ball t; its input is ball t-1's outcome (or the start-of-innings token).
    first = regular[(regular["match_id"] == regular["match_id"].iloc[0]) & (regular["innings"] == 1)]
    n = len(first)
    assert t["outcome"][0, :n].tolist() == first["outcome"].cat.codes.tolist()
    assert t["prev_outcome"][0, 0] == START_OF_INNINGS
    assert t["prev_outcome"][0, 1:n].tolist() == first["outcome"].cat.codes.tolist()[:-1]
    # Right padding: labels ignored, mask off.
    short = int(seqs.lengths.argmin())
    L = int(seqs.lengths[short])
    assert not t["mask"][short, L:].any() and (t["outcome"][short, L:] == IGNORE).all()


def test_vocabularies_come_from_training_seasons_only(encoder, parts):
    """Players are known by registry id, from the training seasons only; a debutant is the unknown."""
    train_batters = set(entity_key(parts["train"], "batter"))
    assert set(encoder.batters.tokens[1:]) <= train_batters and encoder.batters.tokens[0] == UNK
    assert set(encoder.batters.tokens[1:]) <= set(parts["train"]["batter_id"].astype(str))
    test_keys = entity_key(parts["test"], "batter")
    test_only = set(test_keys) - train_batters
    assert test_only  # 2025-2026 debutants exist in the fixtures
    key = sorted(test_only)[0]
    seqs = encoder.encode(parts["test"])
    rows = parts["test"].index[test_keys == key]
    flat_rows, flat_batter = seqs.tensors["row"].flatten(), seqs.tensors["batter"].flatten()
    assert (flat_batter[torch.isin(flat_rows, torch.as_tensor(rows))] == 0).all()


@pytest.mark.parametrize("numeric_embedding", ["mlp", "bins"])
def test_changing_ball_k_or_later_leaves_predictions_up_to_k_unchanged(encoder, parts, numeric_embedding):
    """The leakage test through the whole pipeline: features, sequences and the causal model."""
    innings = parts["test"]
    first = innings[(innings["match_id"] == innings["match_id"].iloc[0]) & (innings["innings"] == 1)].copy()
    torch.manual_seed(0)
    model = CricketTransformer(
        ModelConfig(**encoder.model_dims(), d_model=16, n_heads=2, max_len=200, numeric_embedding=numeric_embedding)
    ).eval()

    def predict(d):
        batch = encoder.encode(d).collate([0])
        with torch.no_grad():
            return model({k: v for k, v in batch.items()}).softmax(-1)[0]

    base = predict(first)
    for k in (0, 37, len(first) - 2):
        changed = first.copy()
        later = changed.index[k:]
        # Ball k becomes a six, every later ball a wicket: runs, wickets and outcomes all change.
        changed.loc[later[0], ["runs_batter", "runs_total"]] = 6
        changed.loc[later[0], "outcome"] = "6"
        changed.loc[later[1:], "wicket_count"] = 1
        changed.loc[later[1:], "outcome"] = "wicket"
        after = predict(changed)
        assert torch.equal(after[: k + 1], base[: k + 1]), f"ball {k} leaked into earlier predictions"
        assert not torch.allclose(after[k + 1 :], base[k + 1 :])


def test_encoder_round_trips_through_plain_python(encoder, parts):
    import json

    state = encoder.to_dict()
    assert tuple(state) == ENCODER_KEYS  # every key it writes is read back
    again = SequenceEncoder.from_dict(json.loads(json.dumps(state)))  # plain types only
    assert again.model_dims() == encoder.model_dims() and again.to_dict() == state
    with pytest.raises(ValueError, match=r"lacks \['team_types'\]"):
        SequenceEncoder.from_dict({k: v for k, v in state.items() if k != "team_types"})
    a, b = encoder.encode(parts["validation"]), again.encode(parts["validation"])
    for name in a.tensors:
        assert torch.allclose(a.tensors[name].float(), b.tensors[name].float(), atol=1e-5), name


def test_quantiles_of_the_scaled_training_features(encoder, parts):
    from cricket_attn.data.features import STATE_COLUMNS

    q = encoder.quantiles
    assert q.shape == (len(encoder.mean), QUANTILE_STEPS + 1) and (np.diff(q, axis=1) >= 0).all()
    scaled = encoder.encode(parts["train"], out_of_fold=True).tensors
    scaled = scaled["numeric"][scaled["mask"]].numpy()
    runs = STATE_COLUMNS.index("runs_before")  # many distinct values: the median splits the balls in half
    below = (scaled[:, runs] <= q[runs, QUANTILE_STEPS // 2] + 1e-5).mean()
    assert 0.49 <= below <= 0.53
    assert q[runs, 0] == pytest.approx(scaled[:, runs].min(), abs=1e-5)
    assert q[runs, -1] == pytest.approx(scaled[:, runs].max(), abs=1e-5)


def test_rates_for_training_rows_exclude_their_own_match(encoder, parts):
    train = parts["train"]
    in_sample = encoder.rates["batter"].transform(train)
    oof = encoder.rates["batter"].out_of_fold(train)
    assert in_sample.shape == oof.shape and not np.allclose(in_sample, oof)


def test_bucketed_batches_cover_every_sequence_once(encoder, parts):
    seqs = encoder.encode(parts["train"])
    sampler = BucketBatchSampler(seqs.lengths, batch_size=4, shuffle=True, seed=1)
    batches = list(sampler)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(seqs))) and len(batches) == len(sampler)
    batch = seqs.collate(batches[0])
    assert batch["outcome"].shape[1] == int(seqs.lengths[batches[0]].max())


def test_fit_encode_gives_the_same_training_set_as_encode(parts):
    encoder, train_set = SequenceEncoder.fit_encode(parts["train"], min_count=5)
    again = encoder.encode(parts["train"], out_of_fold=True)
    assert set(train_set.tensors) == set(again.tensors)
    for name, t in train_set.tensors.items():
        assert torch.equal(t, again.tensors[name]), name


def test_players_histories_in_the_batches(deliveries, parts):
    """With history_balls, each sequence carries its players' histories and each ball its player's slot;
    the histories of earlier matches never change when later matches are added to the known deliveries."""
    from cricket_attn.data.features import entity_key

    enc, train = SequenceEncoder.fit_encode(parts["train"], min_count=5, history_balls=8, known=deliveries)
    assert SequenceEncoder.from_dict(enc.to_dict()).history_balls == 8 and enc.model_dims()["history_balls"] == 8
    test = enc.encode(parts["test"])
    batch = test.collate(list(range(len(test))))
    B, P = batch["batter_history"].shape[:2]
    assert batch["batter_history"].shape == (B, P, 8, 4) and batch["batter_slot"].shape == batch["batter"].shape
    real = batch["mask"]
    assert (batch["batter_slot"][real] < P).all() and (
        batch["bowler_slot"][real] < batch["bowler_history"].shape[1]
    ).all()
    # Balls with the same batter in a sequence share his slot; different batters have different slots.
    names = parts["test"][~parts["test"]["is_super_over"].astype(bool)]
    key = entity_key(names, "batter")
    rows = batch["row"][real].numpy()
    pairs = set(zip(batch["batter_slot"][real].tolist(), key[rows], np.nonzero(real.numpy())[0]))
    assert len({(s, seq) for s, _, seq in pairs}) == len({(k, seq) for _, k, seq in pairs})
    outcome = batch["batter_history"][..., 0]
    assert (outcome >= -1).all() and (outcome < 10).all() and (outcome >= 0).any()  # some 2025-26 batters played before
    # The same test balls, with only the matches up to the test seasons known: identical inputs.
    earlier = deliveries[deliveries["season"] <= parts["test"]["season"].max()]
    enc.attach_known(earlier[earlier["date"] <= parts["test"]["date"].max()])
    again = enc.encode(parts["test"]).collate(list(range(len(test))))
    assert all(torch.equal(batch[k], again[k]) for k in batch)
    enc.attach_known(deliveries[deliveries["season"] < parts["test"]["season"].min()])  # only earlier seasons
    fewer = enc.encode(parts["test"]).collate(list(range(len(test))))
    first_day = parts["test"]["date"].min()
    firsts = np.isin(names["date"].to_numpy()[rows], [first_day])
    seq_of_first = np.unique(np.nonzero(real.numpy())[0][firsts])
    assert torch.equal(batch["batter_history"][seq_of_first], fewer["batter_history"][seq_of_first])


def test_the_chase_carries_its_first_innings(deliveries, parts):
    enc, _ = SequenceEncoder.fit_encode(parts["train"], min_count=5, first_innings=True)
    assert SequenceEncoder.from_dict(enc.to_dict()).first_innings and enc.model_dims()["first_innings"]
    d = parts["test"][~parts["test"]["is_super_over"].astype(bool)].reset_index(drop=True)
    seqs = enc.encode(d)
    batch = seqs.collate(list(range(len(seqs))))
    for b in range(len(seqs)):
        rows = batch["row"][b][batch["mask"][b]].numpy()
        innings = d.loc[rows]
        first = batch["first_innings"][b, 0]
        if innings["target_runs"].notna().all():  # a chase: every ball of its first innings, in order
            one = d[(d["match_id"] == innings["match_id"].iloc[0]) & (d["innings"] == 1)]
            n = len(one)
            assert first[:n, 0].tolist() == one["outcome"].cat.codes.tolist() and (first[n:, 0] == -1).all()
            assert first[:n, 3].tolist() == one["over"].tolist()
            assert first[:n, 1].tolist() == enc.batters.encode(enc.key(one, "batter")).tolist()
        else:
            assert (first[:, 0] == -1).all()
    assert (batch["first_innings_slot"] == 0).all()


def test_a_player_named_like_the_old_unknown_token_is_a_player_of_his_own(phases):
    """A real batter renamed `<unk>` (the unknown's name before it had none) in a real training match keeps
    an embedding of his own, apart from the unknown; a checkpoint saved with `<unk>` still reads him as unknown."""
    from cricket_attn.data.deliveries import build_tables
    from cricket_attn.data.sources import MatchFile
    from tests.conftest import match_file

    renamed = match_file("1082591").raw.replace(b'"MC Henriques"', b'"<unk>"')  # 37 balls faced there alone
    train = build_tables([MatchFile("1082591.json", "1082591", renamed)], phases).deliveries
    enc = SequenceEncoder.fit(train, min_count=5)
    batters = enc.batters
    assert batters.tokens[0] == UNK and enc.names["batter"]["<unk>"] == "32198ae0"  # his registry id
    own, unknown, new = batters.encode(pd.Series(enc.player_keys("batter", ["<unk>", UNK, "A New Batter"])))
    assert own > 0 and unknown == 0 and new == 0
    old = Vocab(["<unk>", "S Dhawan"])  # as saved before: slot 0 is the unknown, whatever its name
    assert old.encode(pd.Series(["<unk>", UNK, "S Dhawan"])).tolist() == [0, 0, 1]


@pytest.fixture(scope="module")
def records_encoder(deliveries, parts):
    """Fitted on the training seasons, reading records as of each match's date from every fixture match."""
    return SequenceEncoder.fit_encode(parts["train"], min_count=5, known=deliveries, records={})[0]


def test_a_training_ball_and_a_test_ball_read_records_by_one_rule(records_encoder, encoder, parts):
    """A training ball's inputs are what the same ball would get as a test ball: no out-of-fold trick,
    as nothing of its own match or a later one is in its record (rates need one, and differ)."""
    train = parts["train"][~parts["train"]["is_super_over"]]
    state = match_state(train, records_encoder.last_season)
    as_trained = records_encoder.numeric(train, state, out_of_fold=True)
    assert np.array_equal(as_trained, records_encoder.numeric(train, state))
    assert not np.array_equal(encoder.numeric(train, state, out_of_fold=True), encoder.numeric(train, state))
    start = records_encoder.block_start("batter")
    assert as_trained.shape[1] == start + 2 * (2 * N_OUTCOMES + 3) + (N_OUTCOMES + 1) + (2 * N_OUTCOMES + 1)
    assert (as_trained[:, start] != 0).any()  # batters with earlier fixture balls have a record


def test_later_matches_never_change_earlier_inputs(records_encoder, deliveries, parts):
    cut = parts["validation"]["date"].max()
    earlier = deliveries[deliveries["date"] <= cut]
    blind = SequenceEncoder.from_dict(records_encoder.to_dict())  # the same encoder, from plain Python
    blind.attach_known(earlier)  # knowing nothing after the validation season
    for part in ("train", "validation"):
        a, b = records_encoder.encode(parts[part]), blind.encode(parts[part])
        assert torch.equal(a.tensors["numeric"], b.tensors["numeric"]), part
    test_a, test_b = records_encoder.encode(parts["test"]), blind.encode(parts["test"])
    assert torch.equal(test_a.tensors["mask"], test_b.tensors["mask"])
    assert not torch.equal(test_a.tensors["numeric"], test_b.tensors["numeric"])  # 2026 reads 2025's matches


def test_an_encoder_reading_records_needs_its_book(records_encoder, parts):
    saved = SequenceEncoder.from_dict(records_encoder.to_dict())
    assert saved.records == records_encoder.records and saved.reads_known and not saved.known_attached
    assert not records_encoder.rates  # nothing fitted on the training seasons as a whole
    with pytest.raises(ValueError, match="no record book is attached: call attach_known"):
        saved.encode(parts["test"])


def test_an_encoder_without_identities_knows_every_player_and_venue_as_the_unknown(deliveries, parts):
    """`data.min_count=null`: no player or venue has an embedding of his own (with records, each is known by
    his record as of the day)."""
    enc, train_set = SequenceEncoder.fit_encode(parts["train"], None, known=deliveries, records={})
    assert enc.batters.tokens == enc.bowlers.tokens == enc.venues.tokens == [UNK]
    for role in ("batter", "bowler", "venue"):
        assert int(train_set.tensors[role].abs().sum()) == 0
    assert enc.model_dims()["n_batters"] == 1


def test_a_model_reads_records_of_the_competitions_it_was_trained_with(records_encoder, deliveries, parts, phases):
    """An IPL model given every league's matches builds its book from the IPL's alone, so an IPL ball reads
    exactly what it read in training (not players' other leagues, evidence and league mixes it never saw);
    a model fitted on every league keeps them all."""
    from cricket_attn.data.deliveries import build_tables
    from cricket_attn.data.histories import known_deliveries
    from cricket_attn.data.sources import iter_match_files
    from tests.data.test_records import LEAGUES

    assert records_encoder.record_competitions == ["Indian Premier League"]
    others = build_tables(iter_match_files([LEAGUES]), phases).deliveries
    pooled = known_deliveries(deliveries, others)
    given_all = SequenceEncoder.from_dict(records_encoder.to_dict())
    assert given_all.record_competitions == ["Indian Premier League"]  # kept in the checkpoint
    given_all.attach_known(pooled)
    a, b = records_encoder.encode(parts["test"]), given_all.encode(parts["test"])
    assert torch.equal(a.tensors["numeric"], b.tensors["numeric"])
    everyone = SequenceEncoder.from_dict({**records_encoder.to_dict(), "record_competitions": None})
    everyone.attach_known(pooled)
    assert not torch.equal(a.tensors["numeric"], everyone.encode(parts["test"]).tensors["numeric"])
    pooled_model = SequenceEncoder.fit_encode(parts["train"], None, known=pooled, records={})[0]
    assert set(pooled_model.record_competitions) == set(pooled["competition"].astype(str))
    with pytest.raises(ValueError, match=r"^no known match of the competitions .* \(Indian Premier League\)$"):
        given_all.attach_known(others)
