"""Why did reduced precision break training? From the numerics recorder's records (`run --numerics`,
docs/numerics.md) to the first tensor that went wrong, the chain of records that led there, and the fix.

Pure: typed records in (``Meta``, ``TensorStat``, ``LossStat``, ``End``; report/numerics.py reads them from the
run folder), a ``model.NumericsVerdict`` out. Fed one record at a time (``Diagnosis.add``), in bounded memory: per
tensor only its last few records, per (tensor, kind) only its first warning, so a million records cost what a few
thousand do.

- **Bad**: a tensor with NaN/inf values (``overflow`` where only inf: a value past the dtype's max; ``nonfinite``
  where NaN), a non-finite loss, or a tensor that became all zeros (``collapsed``). A loss-scaled run's non-finite
  gradients and skipped updates are the scaler at work, not bad; its forward pass overflowing is (no scale fixes it).
- **Warnings** (evidence when something bad follows; "flagged" when nothing does): a low-precision tensor mostly
  zero or below its format's smallest normal (``underflow``), an update larger than its weight (``large_update``;
  a healthy step moves a weight by a tenth of its size or less), a weight grown tenfold in one record
  (``growth``, of weights and activations: evidence only, never flagged alone), a finite value past half the
  format's max (``near_max``).
- The **chain**: the warnings of the bad tensor's layer before it (else of any layer), in step order, then the bad
  record, then how far it spread. Its first link is the root the fix is chosen for.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from nvprof_wrap.analyses.numerics_records import (
    DTYPE_MAX,
    GROWTH,
    NEAR_MAX,
    RATIO_HIGH,
    End,
    LossStat,
    Meta,
    Record,
    TensorStat,
    fmt,
    pct,
    underflow,
    words,
)
from nvprof_wrap.model import EpochMetrics, LossScaleSummary, NumericsBad, NumericsEvidence, NumericsVerdict

__all__ = ["TENSORS", "Diagnosis", "End", "LossStat", "Meta", "Record", "TensorStat", "diagnose", "fixes"]

HISTORY = 3  # records kept per tensor
CHAIN = 6  # records of the chain before the bad one, at most
MAX_KEYS = 50_000  # tensors followed; past it a new tensor's records only count
MAX_HISTORY = 20  # loss-scale changes kept
PHASE = {"forward": 0, "loss": 1, "backward": 2, "update": 3}
TENSORS = ("activation", "gradient", "weight", "update", "optimizer_state")
# The chain's order within one step and phase: what causes what.
_KIND_RANK = {"underflow": 0, "large_update": 1, "growth": 2, "near_max": 3, "last_finite": 4}


@dataclass(frozen=True)
class _Seen:
    """A record placed in the run: (step, phase, order of arrival), and what it is."""

    order: tuple[int, int, int]
    stat: TensorStat
    kind: str
    was: float | None = None  # growth: its max |x| at its record before


def _words(s: _Seen) -> str:
    return words(s.stat, s.kind, s.was)


class Diagnosis:
    """The records of one run, fed in any order of processes, each process's in its own order; ``result`` says."""

    def __init__(self) -> None:
        self.metas: dict[int, Meta] = {}
        self.history: dict[tuple[int, str, str, str], deque[TensorStat]] = {}
        self.warned: dict[tuple[int, str, str, str, str], _Seen] = {}
        self.first_zero: dict[tuple[int, str, str, str], bool] = {}  # all zeros at its first record
        self.bad: _Seen | None = None
        self.bad_scaled: tuple[_Seen, TensorStat | None] | None = None
        self.before_bad: TensorStat | None = None  # the bad tensor's last record before it
        self.seq = 0
        self.records = self.damaged = self.dropped = 0
        self.last_step = -1
        self.loss_scaled = False
        self.scales: list[tuple[int, float]] = []
        self.scale_first: float | None = None
        self.scale_last: float | None = None
        self.scale_min = math.inf
        self.scale_steps = self.decreases = self.skipped = 0
        self.first_skipped: int | None = None
        self.tail_skipped = 0  # skipped steps in a row at the end
        self.first_bad_loss: int | None = None
        self.grad_sub = 0.0
        self.grad_n = 0
        self.bad_at: dict[int, set[str]] = {}  # step → layers with a non-finite tensor, the last two steps
        self.layers_at: dict[int, set[str]] = {}

    # ---- feeding ----

    def add(self, r: Record) -> None:
        self.records += 1
        self.seq += 1
        if isinstance(r, Meta):
            self.metas.setdefault(r.pid, r)
        elif isinstance(r, End):
            self.dropped += max(r.dropped, 0)
        elif isinstance(r, LossStat):
            self._loss(r)
        else:
            self._tensor(r)

    def _loss(self, r: LossStat) -> None:
        self.last_step = max(self.last_step, r.step)
        if r.scale is not None:
            self.loss_scaled = True
            self.scale_steps += 1
            if self.scale_first is None:
                self.scale_first = r.scale
            elif self.scale_last is not None and r.scale < self.scale_last:
                self.decreases += 1
            if r.scale != self.scale_last and len(self.scales) < MAX_HISTORY:
                self.scales.append((r.step, r.scale))
            self.scale_last = r.scale
            self.scale_min = min(self.scale_min, r.scale)
        if r.skipped:
            self.skipped += 1
            self.tail_skipped += 1
            self.first_skipped = r.step if self.first_skipped is None else min(self.first_skipped, r.step)
        elif r.skipped is False:
            self.tail_skipped = 0
        if not r.finite or r.loss is None:
            self.first_bad_loss = r.step if self.first_bad_loss is None else min(self.first_bad_loss, r.step)
            stat = TensorStat(r.pid, r.step, "loss", "(loss)", "loss", "loss", "", 1, None, 0.0, 0.0, 1, 0)
            self._consider(_Seen((r.step, PHASE["loss"], self.seq), stat, "nonfinite"), None)

    def _tensor(self, t: TensorStat) -> None:
        self.last_step = max(self.last_step, t.step)
        key = (t.pid, t.layer, t.tensor, t.name)
        past = self.history.get(key)
        if past is None:
            if len(self.history) >= MAX_KEYS:
                return
            past = self.history[key] = deque(maxlen=HISTORY)
            self.first_zero[key] = t.n > 0 and t.zeros >= 1.0
        prev = past[-1] if past else None
        order = (t.step, PHASE.get(t.phase, 3), self.seq)
        if t.tensor == "gradient" and t.dtype == "float16" and t.max_abs is not None:
            self.grad_sub += t.subnormal
            self.grad_n += 1
        if t.nan or t.inf or (t.max_abs is None and t.n > 0):
            if t.step >= self.last_step - 1:
                self.bad_at.setdefault(t.step, set()).add(t.layer)
                for s in [s for s in self.bad_at if s < self.last_step - 1]:
                    del self.bad_at[s]
            self._consider(_Seen(order, t, "overflow" if t.inf and not t.nan else "nonfinite"), prev)
        elif t.n > 0 and t.zeros >= 1.0 and not self.first_zero[key] and t.tensor != "optimizer_state":
            self._consider(_Seen(order, t, "collapsed"), prev)
        else:
            for kind in self._warnings(t, prev):
                was = prev.max_abs if kind == "growth" and prev is not None else None
                self.warned.setdefault((*key, kind), _Seen(order, t, kind, was))
        if t.step >= self.last_step - 1:
            self.layers_at.setdefault(t.step, set()).add(t.layer)
            for s in [s for s in self.layers_at if s < self.last_step - 1]:
                del self.layers_at[s]
        past.append(t)

    def _scaled(self) -> bool:
        """Whether a loss scaler works in the run: its non-finite gradients and skipped (all-zero) updates are its
        overflow check at work, not the model's numbers going wrong."""
        return self.loss_scaled or bool(self.skipped) or any(
            m.policy is not None and "mixed" in m.policy for m in self.metas.values())

    def _warnings(self, t: TensorStat, prev: TensorStat | None) -> list[str]:
        found = []
        if underflow(t):
            found.append("underflow")
        if t.tensor == "update" and t.ratio is not None and t.ratio >= RATIO_HIGH:
            found.append("large_update")
        if t.tensor in ("weight", "activation") and prev is not None and prev.max_abs and t.max_abs is not None \
                and t.max_abs >= GROWTH * prev.max_abs:
            found.append("growth")
        top = DTYPE_MAX.get(t.dtype)
        if top is not None and top < 1e38 and t.max_abs is not None and t.max_abs >= NEAR_MAX * top:
            found.append("near_max")
        return found

    def _consider(self, seen: _Seen, prev: TensorStat | None) -> None:
        """The earliest bad record; a gradient's or an update's apart, until the end says whether a scaler ran."""
        if seen.stat.tensor in ("gradient", "update"):
            if self.bad_scaled is None or seen.order[:2] < self.bad_scaled[0].order[:2]:
                self.bad_scaled = (seen, prev)
        elif self.bad is None or seen.order[:2] < self.bad.order[:2]:
            self.bad, self.before_bad = seen, prev

    def _settle(self) -> None:
        if self.bad_scaled is not None and not self._scaled() and (
                self.bad is None or self.bad_scaled[0].order[:2] < self.bad.order[:2]):
            self.bad, self.before_bad = self.bad_scaled
        self.bad_scaled = None

    # ---- the verdict ----

    def result(self, final: EpochMetrics | None = None) -> NumericsVerdict:
        self._settle()
        meta = next(iter(self.metas.values()), None)
        framework = meta.framework if meta else None
        chain = self._chain()
        scale = self._loss_scale()
        notes: list[str] = []
        fix: list[str] = []
        cause: str | None = None
        bad = self.bad
        if bad is None:
            flagged: dict[str, list[_Seen]] = {}
            for seen in sorted((s for s in self.warned.values() if s.kind != "growth"), key=lambda s: s.order):
                flagged.setdefault(seen.kind, []).append(seen)
            notes += [f"{_words(found[0])}" + (f" (and {len(found) - 1:,} more tensors)" if len(found) > 1 else "")
                      + ": nothing went non-finite after it" for found in flagged.values()]
            status = "flagged" if flagged else "healthy"
        else:
            status = "broken"
            cause = " → ".join(e.text for e in chain)
            fix = fixes(chain, bad, framework, scale)
            argmax = _argmax_note(final, bool(self.bad_at))
            if argmax:
                notes.append(argmax)
        first = None if bad is None else NumericsBad(bad.stat.step, bad.stat.layer, bad.stat.tensor, bad.kind)
        return NumericsVerdict(status, first, tuple(chain), cause, tuple(fix), scale, tuple(notes), framework,
                               meta.policy if meta else None, len(self.metas), self.last_step + 1, self.records,
                               self.damaged, self.dropped)

    def _chain(self) -> list[NumericsEvidence]:
        bad = self.bad
        if bad is None:
            return []
        meta = self.metas.get(bad.stat.pid)
        place = {name: i for i, name in enumerate(meta.layers)} if meta else {}
        at = place.get(bad.stat.layer)

        def upstream(s: _Seen) -> bool:
            """The bad layer, or (a forward pass) a layer before it: what fed it."""
            if s.stat.layer == bad.stat.layer:
                return True
            i = place.get(s.stat.layer)
            return at is not None and i is not None and (i < at or bad.stat.phase != "forward")

        before = [s for s in self.warned.values() if s.order < bad.order and s.stat.pid == bad.stat.pid]
        picked = [s for s in before if upstream(s)] or sorted(before, key=lambda s: s.order)[:3]
        firsts: dict[tuple[str, ...], _Seen] = {}
        for s in sorted(picked, key=lambda s: (s.order[0], s.order[1], _KIND_RANK[s.kind],
                                               place.get(s.stat.layer, 0), s.order[2])):
            # the root's kind once (the first layer's); growth and near-max per layer, the way to the bad one
            per = (s.stat.tensor, s.kind) if s.kind in ("underflow", "large_update") else \
                (s.stat.tensor, s.kind, s.stat.layer)
            firsts.setdefault(per, s)
        out = [_evidence(s) for s in list(firsts.values())[-CHAIN:]]
        prev = self.before_bad
        if prev is not None and bad.kind == "overflow" and prev.max_abs is not None \
                and not any(e.tensor == prev.tensor and e.layer == prev.layer and e.step == prev.step for e in out):
            out.append(_evidence(_Seen((prev.step, PHASE.get(prev.phase, 3), 0), prev, "last_finite")))
        out.append(_evidence(bad))
        spread = self._spread()
        if spread is not None:
            out.append(spread)
        return out

    def _spread(self) -> NumericsEvidence | None:
        """How far the bad values went: the layers non-finite at the last step recorded, the loss."""
        assert self.bad is not None
        last = max(self.bad_at) if self.bad_at else None
        if last is None or last < self.bad.stat.step:
            return None
        layers, seen = self.bad_at[last], self.layers_at.get(last, set())
        where = (f"every layer ({len(seen)})" if seen and layers >= seen
                 else f"{len(layers)} of {len(seen)} layers" if seen else f"{len(layers)} layers")
        loss = f", loss non-finite from step {self.first_bad_loss}" if self.first_bad_loss is not None else ""
        text = f"NaN/inf in {where} at step {last}{loss}"
        return NumericsEvidence(last, "", "(all)", "", "", "", "spread", None, 0.0, 0.0, 0, None, text)

    def _loss_scale(self) -> LossScaleSummary | None:
        if self.scale_first is None or self.scale_last is None:
            return None
        collapsed = self.scale_min <= 1.0 or self.tail_skipped >= 3
        grad = self.grad_sub / self.grad_n if self.grad_n else None
        text = (f"loss scale {fmt(self.scale_first)} → {fmt(self.scale_last)} (lowest {fmt(self.scale_min)}, "
                f"fell {self.decreases:,} times); {self.skipped:,} of {self.scale_steps:,} steps skipped"
                + (f" from step {self.first_skipped}" if self.first_skipped is not None else ""))
        if collapsed:
            text += (": the scale collapsed (every step overflowed): something overflows that no scale fixes, "
                     "usually a forward pass past float16's 65504")
        elif self.skipped:
            text += ": normal while the scaler finds its scale"
        if grad is not None:
            text += f"; float16 gradients: {pct(grad)} of their nonzero values below the smallest normal"
        return LossScaleSummary(self.scale_first, self.scale_last, self.scale_min, self.decreases, self.skipped,
                                self.first_skipped, self.scale_steps, collapsed, tuple(self.scales), grad, text)

def _evidence(s: _Seen) -> NumericsEvidence:
    t = s.stat
    return NumericsEvidence(t.step, t.phase, t.layer, t.tensor, t.name, t.dtype, s.kind, t.max_abs, t.zeros,
                            t.subnormal, t.nan + t.inf, t.ratio, _words(s))


def _argmax_note(final: EpochMetrics | None, nonfinite_at_end: bool) -> str | None:
    """The seed's symptom named (docs/seed-collapse.md): NaN weights, accuracy at one class's share, loss 0."""
    if final is None or not nonfinite_at_end:
        return None
    acc = final.accuracy if final.accuracy is not None else final.val_accuracy
    if acc is None:
        return None
    text = (f"the model's outputs are NaN, and argmax of a NaN row is class 0: accuracy {pct(acc)} is class 0's "
            "share of the data, not anything learnt")
    if final.loss == 0.0:
        text += ("; the loss shows 0.0 because a NaN probability clipped to its bound 1.0 gives log(1) = 0 "
                 "(docs/seed-collapse.md)")
    return text


def fixes(chain: list[NumericsEvidence], bad: _Seen, framework: str | None,
          scale: LossScaleSummary | None) -> list[str]:
    """Changes that can work for the chain's root, in the job's framework's words (Keras unless torch)."""
    torch = framework == "torch"
    root = next((e for e in chain if e.kind not in ("last_finite", "spread")), None)
    layer = bad.stat.layer
    mixed = ("autocast to float16 with float32 parameters and torch.amp.GradScaler (do not .half() the model)"
             if torch else "keras.mixed_precision.set_global_policy('mixed_float16') instead of "
             "set_floatx('float16'): float32 master weights and optimizer state, with a LossScaleOptimizer")
    bf16 = ("torch.autocast(device_type='cuda', dtype=torch.bfloat16): float32's range, no loss scale needed" if torch
            else "keras.mixed_precision.set_global_policy('mixed_bfloat16'): float32's range, no loss scale needed")
    fp32_layer = (f"run {layer} in float32: `with torch.autocast('cuda', enabled=False): y = {layer}(x.float())`"
                  if torch else f"keep {layer} in float32: give the layer dtype='float32'")
    out: list[str] = []
    if root is not None and root.tensor == "optimizer_state":
        out = [mixed, bf16,
               "keep the optimizer state in float32 (an fp32 master copy of the weights and their accumulators)",
               f"a larger epsilon (1e-3 or more): with {root.name} 0 the step is lr·g/epsilon, e.g. "
               + ("torch.optim.RMSprop(..., eps=1e-3)" if torch else "keras.optimizers.RMSprop(epsilon=1e-3)")]
    elif root is not None and root.kind == "large_update":
        out = [mixed, "a larger epsilon or a lower learning rate: an update larger than its weight",
               "gradient clipping: " + ("torch.nn.utils.clip_grad_norm_" if torch else "clipnorm=1.0 on the optimizer")]
    elif bad.stat.tensor == "activation" or (root is not None and root.kind == "near_max"):
        out = [bf16, fp32_layer]
        if scale is not None:
            out.append("a loss scale cannot fix this: the forward pass itself overflows")
        else:
            out.append(mixed)
    elif root is not None and root.tensor == "gradient" or bad.kind == "collapsed":
        out = [f"loss scaling: {mixed}" if scale is None else "a higher initial loss scale", bf16]
    else:
        out = [mixed, bf16, fp32_layer]
    if scale is not None and scale.collapsed and bad.stat.tensor != "activation":
        out.append("the loss scale collapsed: find what overflows every step (the first bad tensor above)")
    return out


def diagnose(records: Iterable[Record], final: EpochMetrics | None = None) -> NumericsVerdict:
    d = Diagnosis()
    for r in records:
        d.add(r)
    return d.result(final)
