"""What the attention heads look at: their weights over an innings, and a report of which head follows
what (the previous ball, the over, the bowler, the batter, the phase, the start).

Every share is measured against uniform causal attention, which spreads each ball's attention evenly
over itself and the balls before it: a ratio well above 1 says a head seeks that kind of ball out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from cricket_attn import progress
from cricket_attn.data.batches import BucketBatchSampler
from cricket_attn.data.histories import NO_BALL, sequence_histories
from cricket_attn.data.sequences import SequenceEncoder
from cricket_attn.model import CricketTransformer, Ensemble

# The kinds of earlier ball a head may favour; a ball's own position is `self`. Same bowler, batter
# and phase count earlier overs only (`category_masks`); after a boundary (a wicket) are the positions
# that read a four or six (a wicket) as their previous ball. Each is read against its own uniform share.
CATEGORIES = (
    "self",
    "previous_ball",
    "rest_of_over",
    "same_bowler",
    "same_batter",
    "same_phase",
    "first_ball",
    "after_boundary",
    "after_wicket",
)
BALL_COLUMNS = ("match_id", "innings", "over", "ball_in_over", "outcome", "batter", "bowler", "phase")
SPECIALISED = 2.0  # a head specialises in a kind of ball when it puts twice the uniform share there


@dataclass
class InningsAttention:
    """One innings: its balls in order, and every layer's and head's weights, (L, H, T, T)."""

    balls: pd.DataFrame
    weights: np.ndarray

    @property
    def title(self) -> str:
        first = self.balls.iloc[0]
        return f"match {first['match_id']}, innings {first['innings']}"

    def labels(self) -> list[str]:
        """Each ball as a scorer reads it: over.ball (over counted from 0), outcome, batter v bowler."""
        b = self.balls
        return [
            f"{o}.{i} {out} {bat} v {bowl}"
            for o, i, out, bat, bowl in zip(
                b["over"], b["ball_in_over"], b["outcome"].astype(str), b["batter"], b["bowler"]
            )
        ]

    def position(self, over: int, ball: int) -> int:
        """The index in the innings of the delivery at over.ball."""
        hit = np.flatnonzero((self.balls["over"].to_numpy() == over) & (self.balls["ball_in_over"].to_numpy() == ball))
        if not len(hit):
            last = self.balls.iloc[-1]
            raise ValueError(
                f"{self.title} has no ball {over}.{ball} (it ends at {last['over']}.{last['ball_in_over']})"
            )
        return int(hit[0])


def one_model(model: CricketTransformer | Ensemble, member: int = 0) -> CricketTransformer:
    """The transformer whose heads are drawn: each member of an ensemble has heads of its own."""
    if isinstance(model, Ensemble):
        if not 0 <= member < len(model.members):
            raise ValueError(f"member {member}: the ensemble has members 0 to {len(model.members) - 1}")
        return model.members[member]
    return model


@torch.no_grad()
def innings_attention(
    model: CricketTransformer,
    encoder: SequenceEncoder,
    deliveries: pd.DataFrame,
    batch_size: int = 64,
    desc: str | None = None,
):
    """Yields an `InningsAttention` for every regular innings of `deliveries`, in table order."""
    d = deliveries.reset_index(drop=True)
    sequences = encoder.encode(d)
    model.eval()
    batches = BucketBatchSampler(sequences.lengths, batch_size, shuffle=False)
    for idx in progress.track(batches, desc, total=len(batches), unit="batch") if desc else batches:
        batch = sequences.collate(idx)
        weights: list[torch.Tensor] = []
        model(batch, attention=weights)
        stacked = torch.stack(weights, dim=1).numpy()  # (B, L, H, T, T)
        for b, n in enumerate(sequences.lengths[idx].tolist()):
            rows = batch["row"][b, :n].numpy()
            yield InningsAttention(d.loc[rows, list(BALL_COLUMNS)].reset_index(drop=True), stacked[b, :, :, :n, :n])


def category_masks(balls: pd.DataFrame) -> dict[str, np.ndarray]:
    """For each category, a (T, T) boolean: is ball s (column) of that kind for ball t (row)? Only
    s <= t is ever true: nothing attends forward. The bowler, batter and phase categories count balls
    of earlier overs only, so that a head following the current over (the same bowler, mostly the same
    batters) is told apart from one that seeks out a bowler's or batter's earlier spells."""
    T = len(balls)
    t, s = np.arange(T)[:, None], np.arange(T)[None, :]
    earlier = s < t

    def same(column: str) -> np.ndarray:
        v = pd.factorize(balls[column].astype(str))[0]
        return v[:, None] == v[None, :]

    same_over = same("over") & same("innings")
    earlier_over = earlier & ~same_over
    outcome = balls["outcome"].astype(str).to_numpy()
    before = np.concatenate([["start"], outcome[:-1]])  # what position s reads as its previous ball
    return {
        "self": s == t,
        "previous_ball": s == t - 1,
        "rest_of_over": earlier & (s < t - 1) & same_over,
        "same_bowler": earlier_over & same("bowler"),
        "same_batter": earlier_over & same("batter"),
        "same_phase": earlier_over & same("phase"),
        "first_ball": (s == 0) & earlier,
        "after_boundary": earlier & np.isin(before, ("4", "6"))[None, :],
        "after_wicket": earlier & (before == "wicket")[None, :],
    }


def head_report(
    model: CricketTransformer | Ensemble,
    encoder: SequenceEncoder,
    deliveries: pd.DataFrame,
    member: int = 0,
    desc: str | None = None,
) -> pd.DataFrame:
    """One row per layer and head: for every kind of ball, the mean share of a ball's attention it
    gets (`<kind>`), what uniform causal attention would give it (`<kind>_uniform`) and their ratio;
    the mean distance attended to, in deliveries, against uniform's; `spread`, the entropy of a ball's
    weights over the largest it could have (1: an even spread; near 0: one ball), which says whether
    a head is selective at all, by whatever it selects on; and the kinds it specialises in. Averaged
    over every ball that has an earlier one in its innings."""
    net = one_model(model, member)
    L, H = net.cfg.n_layers, net.cfg.n_heads
    share, uniform = np.zeros((len(CATEGORIES), L, H)), np.zeros(len(CATEGORIES))
    distance, distance_uniform, spread, queries = np.zeros((L, H)), 0.0, np.zeros((L, H)), 0
    for inn in innings_attention(net, encoder, deliveries, desc=desc):
        T = len(inn.balls)
        if T < 2:
            continue
        w = inn.weights[:, :, 1:, :]  # (L, H, T - 1, T): balls with an earlier one
        masks = category_masks(inn.balls)
        seen = np.arange(2, T + 1)  # balls each query may see under causal attention (itself included)
        for c, name in enumerate(CATEGORIES):
            m = masks[name][1:]
            share[c] += (w * m).sum(axis=(-1, -2))
            uniform[c] += (m.sum(-1) / seen).sum()
        gap = np.arange(1, T)[:, None] - np.arange(T)[None, :]  # (T - 1, T): t - s
        distance += (w * np.clip(gap, 0, None)).sum(axis=(-1, -2))
        entropy = -(w * np.log(np.clip(w, 1e-12, None))).sum(-1)  # (L, H, T - 1)
        spread += (entropy / np.log(seen)).sum(-1)
        distance_uniform += ((seen - 1) / 2).sum()
        queries += T - 1
    if queries == 0:
        raise ValueError("no innings with two or more balls to report on")
    rows = []
    for layer in range(L):
        for head in range(H):
            row = {"layer": layer, "head": head}
            for c, name in enumerate(CATEGORIES):
                row[name] = share[c, layer, head] / queries
                row[f"{name}_uniform"] = uniform[c] / queries
                row[f"{name}_ratio"] = row[name] / row[f"{name}_uniform"] if uniform[c] else float("nan")
            row["distance"] = distance[layer, head] / queries
            row["distance_uniform"] = distance_uniform / queries
            row["spread"] = spread[layer, head] / queries
            ranked = sorted(
                (n for n in CATEGORIES if row[f"{n}_ratio"] >= SPECIALISED), key=lambda n: -row[f"{n}_ratio"]
            )
            row["specialises_in"] = ", ".join(ranked) or "nothing (near uniform)"
            rows.append(row)
    report = pd.DataFrame(rows)
    report.attrs["balls"] = queries
    return report


# How long before a ball's match its history ball was played: the age bands of the readers' report.
AGE_BANDS = (
    (30, "within 30 days"),
    (90, "31-90 days"),
    (365, "91-365 days"),
    (730, "1-2 years"),
    (None, "over 2 years"),
)


def age_band(days_before: np.ndarray) -> np.ndarray:
    """Each gap in days as its band's label (`AGE_BANDS`)."""
    labels = np.full(days_before.shape, AGE_BANDS[-1][1], dtype=object)
    for limit, label in reversed(AGE_BANDS[:-1]):
        labels[days_before <= limit] = label
    return labels


@torch.no_grad()
def history_report(
    model: CricketTransformer | Ensemble,
    encoder: SequenceEncoder,
    deliveries: pd.DataFrame,
    member: int = 0,
    batch_size: int = 64,
) -> pd.DataFrame:
    """What the players' history readers read, over every ball of `deliveries` (the encoder's histories
    attached): one row per reader (`batter_history`: the batter's balls faced in earlier matches;
    `bowler_history`: the bowler's bowled), kind (`competition`, `age`) and value, with `held`, the share
    of the balls in the read histories that are of that value (what reading every held ball alike would
    give), `read`, the share of the reader's attention on them (the mean over heads, the learned "nothing"
    key left out), and their ratio; and one row per reader of kind `nothing`: the share of its attention
    on that key, with `held` the share of balls whose player has no history at all."""
    net = one_model(model, member)
    if not net.cfg.history_balls:
        raise ValueError("the model reads no players' histories (trained with data.history_balls=0)")
    K = net.cfg.history_balls
    d = deliveries.reset_index(drop=True)
    regular = d[~d["is_super_over"].astype(bool)]
    sequences = encoder.encode(d)
    sums: dict[tuple[str, str, str], list[float]] = {}  # (reader, kind, value) -> [held, read], summed over balls
    nothing: dict[str, list[float]] = {}  # reader -> [balls with no history, attention on "nothing", balls]
    histories = {}
    for role in net.cfg.history_roles:
        store = encoder.attached_histories().stores[role]
        _, index, listed = sequence_histories(regular, store, K)
        at = np.where(index == NO_BALL, 0, index)
        gap = listed["day"].to_numpy()[:, None] - store.tokens["day"][at]
        histories[role] = (
            {(s, p): i for i, (s, p) in enumerate(zip(listed["sequence"], listed["slot"], strict=True))},
            index != NO_BALL,
            {"competition": store.tokens["competition"][at], "age": age_band(gap)},
        )
    net.eval()
    for idx in BucketBatchSampler(sequences.lengths, batch_size, shuffle=False):
        batch = sequences.collate(idx)
        reading: dict[str, torch.Tensor] = {}
        net(batch, reading=reading)
        for role in net.cfg.history_roles:
            name = f"{role}_history"
            where, held, values = histories[role]
            w = reading[name].mean(1).numpy()  # (B, T, P * (K + 1)): the mean over heads
            for b, (seq, n) in enumerate(zip(idx, sequences.lengths[idx].tolist(), strict=True)):
                slots = batch[f"{role}_slot"][b, :n].numpy()
                rows = np.array([where[(seq, s)] for s in slots])  # each ball's player's history
                start = slots * (K + 1)
                own = w[b, np.arange(n)[:, None], start[:, None] + np.arange(K + 1)]  # (n, K + 1): nothing first
                empty = ~held[rows].any(-1)
                tally = nothing.setdefault(name, [0.0, 0.0, 0.0])
                tally[0] += empty.sum()
                tally[1] += own[:, 0].sum()
                tally[2] += n
                share = own[:, 1:] / np.clip(own[:, 1:].sum(-1, keepdims=True), 1e-12, None)  # of the balls read
                for kind, labels in values.items():
                    lab, h = labels[rows], held[rows]
                    for value in np.unique(lab[h]):
                        on = h & (lab == value)
                        counts = on.sum(-1) / np.clip(h.sum(-1), 1, None)
                        acc = sums.setdefault((name, kind, str(value)), [0.0, 0.0])
                        acc[0] += counts[~empty].sum()
                        acc[1] += (share * on)[~empty].sum()
    rows_out = []
    read_balls = {name: t[2] - t[0] for name, t in nothing.items()}
    for (name, kind, value), (held_sum, read_sum) in sums.items():
        n = max(read_balls[name], 1)
        rows_out.append({"reader": name, "kind": kind, "value": value, "held": held_sum / n, "read": read_sum / n})
    for name, (empty, on_nothing, balls) in nothing.items():
        rows_out.append(
            {"reader": name, "kind": "nothing", "value": "nothing", "held": empty / balls, "read": on_nothing / balls}
        )
    report = pd.DataFrame(rows_out)
    report["ratio"] = (report["read"] / report["held"].where(report["held"] > 0)).where(report["kind"] != "nothing")
    # Competitions by their share of the balls held, age bands youngest first, then "nothing".
    band = {label: i for i, (_, label) in enumerate(AGE_BANDS)}
    rank = np.where(report["kind"] == "age", report["value"].map(band).fillna(0), -report["held"])
    report = report.assign(_kind=report["kind"].map({"competition": 0, "age": 1, "nothing": 2}), _rank=rank)
    return report.sort_values(["reader", "_kind", "_rank"]).drop(columns=["_kind", "_rank"]).reset_index(drop=True)


def history_table(report: pd.DataFrame) -> str:
    """The readers' report as markdown: for each reader, the competitions and age bands of the balls it
    holds against the share of its attention they get; then its attention on "nothing" (against the share of
    balls whose player has no history)."""
    lines = [
        "| reader | kind | value | share of balls held | share of attention | ratio |",
        "|---|---|---|---:|---:|---:|",
    ]
    for r in report.to_dict("records"):
        ratio = "" if r["kind"] == "nothing" else f"{r['ratio']:.2f}"
        lines.append(
            f"| {r['reader'].replace('_', ' ')} | {r['kind']} | {r['value']} | {r['held']:.3f} | {r['read']:.3f} "
            f"| {ratio} |"
        )
    return "\n".join(lines) + "\n"


def report_table(report: pd.DataFrame) -> str:
    """The head report as markdown: share (ratio to uniform) for each kind of ball, distance and spread."""
    names = {
        "same_bowler": "same bowler, earlier overs",
        "same_batter": "same batter, earlier overs",
        "same_phase": "same phase, earlier overs",
    }
    head = [
        "layer.head",
        *(names.get(n, n.replace("_", " ")) for n in CATEGORIES),
        "mean distance",
        "spread",
        "specialises in",
    ]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        "| uniform | "
        + " | ".join(f"{report.iloc[0][f'{n}_uniform']:.3f}" for n in CATEGORIES)
        + f" | {report.iloc[0]['distance_uniform']:.1f} | 1.00 | |",
    ]
    for r in report.to_dict("records"):
        cells = [f"{r[n]:.3f} ({r[f'{n}_ratio']:.1f}x)" for n in CATEGORIES]
        lines.append(
            f"| {r['layer']}.{r['head']} | "
            + " | ".join(cells)
            + f" | {r['distance']:.1f} | {r['spread']:.2f} | {r['specialises_in']} |"
        )
    return "\n".join(lines) + "\n"
