"""Training-health check for any wrapped job.

Answers "did training work?" from per-epoch metrics: either the JSON-lines
file the bundled workloads write (``NVPROF_WRAP_METRICS``, see
``workloads/_common.py``) or the Keras progress output of any Keras job; for a
job that prints no epochs, from its per-step loss lines (nanoGPT's
``iter N: loss L``, ``step N: train loss L, val loss V``, ``step: N loss: L``),
judged over medians of up to ten spans of its steps (one step's noise is no trend).

Pure functions, no printing: the CLI decides how to show a verdict.

Statuses:
  healthy    losses finite and (with 2+ epochs) lower at the end than at the start by more than 1%
  no-learning  losses finite, 2+ epochs (or step spans), and the loss fell by 1% or less over the whole run
             (or rose, short of diverging): nothing was learned
  collapsed  loss exactly 0.0 while accuracy sits at or below chance (the seed:
             pure-fp16 Keras 2 training, whose weights most likely turned NaN)
  nan        a loss (or val_loss) became NaN or infinite
  diverged   the loss rose well above its minimum and above where it started
  unknown    no metrics, or nothing conclusive (one epoch only, a loss stuck at exactly 0.0 without accuracy)
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from nvprof_wrap.model import EpochMetrics, HealthVerdict
from nvprof_wrap.system import bounded
from nvprof_wrap.system.limits import MAX_LINE_BYTES
from nvprof_wrap.text.units import pct as _pct

__all__ = ["EpochMetrics", "HealthVerdict", "StepLosses", "assess", "assess_steps", "health_from_run",
           "parse_keras_log", "parse_metrics_jsonl", "parse_step_log", "parse_step_logs"]

# Without a class count, "accuracy below 5% with zero loss" is the collapse test.
COLLAPSE_ACCURACY_NO_CLASSES = 0.05
# With a class count, accuracy up to this multiple of chance still counts as
# "at chance": a collapsed model predicts one class, whose frequency can sit a
# little above 1/num_classes on imbalanced data.
CHANCE_MULTIPLE = 2.0
DIVERGE_FACTOR = 2.0


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------

_METRIC_KEYS = {
    "loss": "loss", "acc": "accuracy", "accuracy": "accuracy",
    "val_loss": "val_loss", "val_acc": "val_accuracy", "val_accuracy": "val_accuracy",
}
_NONFINITE = {"nan": math.nan, "-nan": math.nan, "inf": math.inf, "+inf": math.inf,
              "-inf": -math.inf, "infinity": math.inf, "-infinity": -math.inf}


def _to_float(value: Any) -> float | None:
    """JSON value -> float; the workloads write non-finite floats as strings."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float):
        return value
    if isinstance(value, int):  # past a float's range (a loss of 10**400): infinite, as 1e400 already reads
        return float(value) if abs(value) < 2**1023 else (math.inf if value > 0 else -math.inf)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _NONFINITE:
            return _NONFINITE[text]
        try:
            return float(text)
        except ValueError:
            return None
    return None


def pieces_of(path: Path, limit: int | None = None) -> Iterator[tuple[bytes, bool]]:
    """A file the job wrote in pieces of about 1 MiB that end at a line's end (\\n or \\r: progress bars rewrite
    their line with \\r), never read whole: (piece, False); a line longer than ``limit`` bytes (default
    MAX_LINE_BYTES) comes cut, as (its first ``limit`` bytes, True), the rest of it dropped."""
    limit = MAX_LINE_BYTES if limit is None else limit
    rest, dropping = b"", False
    with open(path, "rb") as f:
        while chunk := f.read(PIECE_BYTES):
            buf = rest + chunk
            if dropping:  # the rest of a cut line, up to its end
                end = _LINE_END.search(buf)
                if end is None:
                    rest = b""
                    continue
                buf, dropping = buf[end.end():], False
            last = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
            if last >= 0:
                yield buf[:last + 1], False
            rest = buf[last + 1:]
            if len(rest) > limit:
                yield rest[:limit], True
                rest, dropping = b"", True
    if rest and not dropping:
        yield rest, False


PIECE_BYTES = 1 << 20


def lines_of(path: Path, keep: Callable[[bytes], bool] | None = None, limit: int | None = None) -> Iterator[bytes]:
    """The lines of a file the job wrote (split at \\n and \\r), each cut at ``limit`` bytes (default
    MAX_LINE_BYTES), the rest of a longer one dropped: read in pieces (pieces_of), never whole (a job that printed
    gigabytes made `report RUN_DIR` and the end of `run` fail with MemoryError).
    keep: only the lines it says yes to (a piece it says no to is skipped without splitting it)."""
    for piece, cut in pieces_of(path, limit):
        if keep is not None and not keep(piece):
            continue
        if cut:
            yield piece
            continue
        parts = _LINE_END.split(piece)
        if not parts[-1]:  # the piece ends at a line's end
            parts.pop()
        yield from (parts if keep is None else (p for p in parts if keep(p)))


_LINE_END = re.compile(rb"[\r\n]")


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    for raw in lines_of(path):
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            continue
        try:
            record = bounded.loads(line)
        except ValueError:  # damage of any kind, a number past Python's, nesting past the parser's
            continue  # a killed job can leave a truncated last line
        if isinstance(record, dict):
            yield record


def parse_metrics_jsonl(path: str | Path) -> list[EpochMetrics]:
    """Epoch records from a workload metrics file (event lines are skipped)."""
    by_epoch: dict[int, EpochMetrics] = {}
    for record in _read_jsonl(Path(path)):
        epoch = record.get("epoch")
        if "event" in record or not isinstance(epoch, int) or isinstance(epoch, bool):
            continue
        by_epoch[epoch] = EpochMetrics(
            epoch=epoch, **{key: _to_float(record.get(key))
                            for key in ("loss", "accuracy", "val_loss", "val_accuracy")})
    return [by_epoch[e] for e in sorted(by_epoch)]


def metric_steps(path: str | Path) -> int | None:
    """The training steps a workload metrics file counts: the sum of its epoch records' "steps" (the last record of
    an epoch wins); None when no epoch record counts its steps."""
    by_epoch: dict[int, int] = {}
    for record in _read_jsonl(Path(path)):
        epoch, steps = record.get("epoch"), record.get("steps")
        if "event" in record or not isinstance(epoch, int) or isinstance(epoch, bool):
            continue
        if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0:
            by_epoch[epoch] = steps
    return sum(by_epoch.values()) if by_epoch else None


def metrics_header(path: str | Path) -> dict[str, Any]:
    """The ``{"event": "start", ...}`` record of a metrics file, or {}."""
    for record in _read_jsonl(Path(path)):
        if record.get("event") == "start":
            return record
    return {}


# ANSI CSI sequences (colours, cursor moves, erase-line) and OSC titles.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_EPOCH = re.compile(r"^\s*Epoch\s+(\d+)\s*/\s*(\d+)\s*$")
_NUMBER_TEXT = r"[-+]?(?:nan|inf(?:inity)?|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
_PAIR = re.compile(r"(?:^|\s)([A-Za-z_][\w]*):\s+(" + _NUMBER_TEXT + r")(?=\s|$)", re.IGNORECASE)
# "7982/7982 [====...]" (Keras 2) or "16/16 ━━━━" / "16/16 - 1s" (Keras 3).
_COUNTER = re.compile(r"^\s*(\d+)/(\d+)\b")


def _strip_terminal(text: str) -> str:
    return _ANSI.sub("", text)


def _record(segment: str) -> dict[str, float] | None:
    """The loss/accuracy values of one progress segment, or None."""
    values: dict[str, float] = {}
    for key, raw in _PAIR.findall(segment):
        name = _METRIC_KEYS.get(key.lower())
        number = _to_float(raw)
        if name is not None and number is not None:
            values[name] = number
    return values if "loss" in values else None


def _counter(segment: str) -> tuple[int, int] | None:
    match = _COUNTER.match(segment)
    return (int(match.group(1)), int(match.group(2))) if match else None


class _EpochRecords:
    """Collects the progress records of one epoch and picks its final one."""

    def __init__(self) -> None:
        self.total: int | None = None  # the progress counter's total, e.g. 16 in 16/16
        self.seen_record = False
        self.best: dict[str, float] | None = None
        self.partial: dict[str, float] | None = None

    def add(self, segment: str, values: dict[str, float]) -> None:
        counter = _counter(segment)
        if not self.seen_record:
            self.seen_record = True
            self.total = counter[1] if counter else None
        if (counter[1] if counter else None) != self.total:
            return  # another progress bar, e.g. a model.evaluate() after fit()
        complete = "ETA" not in segment and (counter is None or counter[0] == counter[1])
        if not complete:
            self.partial = values
        elif self.best is None or len(values) >= len(self.best):
            # Keras 3 prints the last step twice: first without, then with
            # the val_* metrics; the fuller (and later) record wins.
            self.best = values

    def result(self) -> dict[str, float] | None:
        return self.best if self.best is not None else self.partial


def parse_keras_log(text: str) -> list[EpochMetrics]:
    """Per-epoch metrics from Keras 2 or Keras 3 ``fit`` output.

    Progress-bar updates are separated by carriage returns (and Keras 3 adds
    backspaces and colours); every update is treated as its own record.  Per
    epoch the last complete record (counter at its total, or a verbose=2 line
    without a counter) with the most metrics wins; records of a progress bar
    with another total (``model.evaluate`` after ``fit``) are ignored.  With
    no complete record (a job killed mid-epoch), the last partial one stands in.
    A log without any ``Epoch N/M`` header (Keras 3, ``epochs=1``) is read as
    one epoch; a log of ``evaluate`` alone would be mistaken for one too.
    """
    return _parse_segments(re.split(r"[\r\n]", _strip_terminal(text).replace("\b", "")))


def _maybe(text: bytes) -> bool:
    """Whether a line can matter to the parser: an epoch header, a record with a loss ("loss: 0.5"), or terminal
    codes to strip first. The others, most of a long job's output, are not decoded (substring tests: a regular
    expression with these alternatives scanned 30 MB/s)."""
    return b"Epoch" in text or b"\x1b" in text or b"\b" in text or b"loss:" in text.lower()


def parse_keras_logs(paths: Iterable[Path]) -> list[EpochMetrics]:
    """parse_keras_log over log files, streamed: memory stays flat however much the job printed, and only the
    lines that can hold an epoch header or a loss are decoded."""
    def segments() -> Iterator[str]:
        for path in paths:
            for raw in lines_of(path, keep=_maybe):
                yield _strip_terminal(raw.decode("utf-8", errors="replace")).replace("\b", "")
    return _parse_segments(segments())


# --------------------------------------------------------------------------
# Per-step loss lines (a job that prints no epochs)
# --------------------------------------------------------------------------

_NUMBER = _NUMBER_TEXT.encode()
# A step word and its number where a line begins ("iter 100:", "step 100:", "step: 10", "[step 5]"), then a training
# loss ("loss 2.4", "train loss 2.4", "training_loss=2.4"; not "val loss"), the rest of the line after it. One
# expression over a whole piece of the log (4x faster than line by line in Python: 2.5 s for 1M lines on 2 busy cores).
_STEP_LINE = re.compile(
    rb"(?:^|(?<=\r))[^\w\r\n]*(?:iter(?:ation)?|step)[ \t]*[:=#]?[ \t]*(\d+)\b([^\r\n]*?)"
    rb"(?<![\w])(?<!val )(?<!validation )(?:train(?:ing)?[_ ])?loss[ \t]*[:=]?[ \t]*(" + _NUMBER + rb")(?![\w.])"
    rb"([^\r\n]*)", re.IGNORECASE | re.MULTILINE)
_STEP_VAL_LOSS = re.compile(rb"(?<![\w])val(?:idation)?[_ ]loss[ \t]*[:=]?[ \t]*(" + _NUMBER + rb")(?![\w.])",
                            re.IGNORECASE)
_ANSI_BYTES = re.compile(_ANSI.pattern.encode())
STEP_SPANS = 10  # a step log is judged over the medians of at most this many spans of its steps
# A loss "fell" only by more than this share of where it began, over epochs or step spans alike: a model that cannot
# learn (nanoGPT on random tokens, measured on the H200) drifts 4.18 -> 4.175 between its first and last spans, and
# a 0.5% fall over a run's epochs is no learning either (issue 45).
STEP_FLAT = 0.01
NO_LEARNING = "no-learning"


class StepLosses:
    """The losses a job printed per step, in the order printed: two float arrays (16 bytes a step, however long
    the job), a step printed twice in a row (nanoGPT's evaluation line, then the iteration's own) counted once, its
    later loss kept; validation losses, printed at a few steps, beside them."""

    def __init__(self) -> None:
        self.steps, self.losses = array("d"), array("d")
        self.val: dict[int, float] = {}

    def feed(self, text: bytes) -> None:
        """Whole lines of the log (a piece of it that ends at a line's end)."""
        if b"\x1b" in text:
            text = _ANSI_BYTES.sub(b"", text)
        steps, losses, val_in = self.steps, self.losses, _STEP_VAL_LOSS.search
        hinted = b"val" in text.lower()  # validation losses: a few lines in most logs, none in many
        for m in _STEP_LINE.finditer(text):
            step, loss = float(m.group(1)), float(m.group(3))
            if steps and steps[-1] == step:
                losses[-1] = loss
            else:
                steps.append(step)
                losses.append(loss)
            if hinted and (val := val_in(text, m.start(), m.end())) is not None:
                self.val[int(step)] = float(val.group(1))

    def __len__(self) -> int:
        return len(self.steps)


def parse_step_logs(paths: Iterable[Path]) -> StepLosses:
    """The per-step losses in log files, streamed in pieces."""
    found = StepLosses()
    for path in paths:
        for piece, cut in pieces_of(path):
            if not cut:  # a cut line's step and loss may be anywhere in what was dropped
                found.feed(piece)
    return found


def parse_step_log(text: str) -> StepLosses:
    found = StepLosses()
    found.feed(text.encode("utf-8", errors="replace"))
    return found


def assess_steps(found: StepLosses) -> HealthVerdict:
    """Judge a job from its per-step losses: a NaN/inf loss at its last logged step (where it began), or a loss stuck
    at exactly 0.0 to the end (where that began); trend and divergence over the medians of up to STEP_SPANS spans of
    its finite steps, named by their steps. NaN/inf losses the job got past (finite again at its end: a loss
    scaler's skipped steps, say) are said first and left out of the spans."""
    n = len(found)
    if not n:
        return HealthVerdict("unknown", ("no per-epoch or per-step loss found",), 0, None, unit="step")
    steps, losses = found.steps, found.losses
    final = EpochMetrics(epoch=int(steps[-1]), loss=losses[-1], val_loss=found.val.get(int(steps[-1])))

    def verdict(status: str, *findings: str | None) -> HealthVerdict:
        return HealthVerdict(status, tuple(f for f in findings if f), n, final, unit="step")

    bad = [i for i, loss in enumerate(losses) if not math.isfinite(loss)]
    passed = None
    if bad and not math.isfinite(losses[-1]):
        return verdict("nan", f"loss became {_bad_word(losses[bad[0]])} at step {int(steps[bad[0]])}")
    if bad:  # and finite again by the end: judged on its finite steps, saying so first
        words = " / ".join(sorted({_bad_word(losses[i]) for i in bad}))
        passed = (f"loss was {words} at {len(bad):,} step{'s' * (len(bad) > 1)} (first step {int(steps[bad[0]])}, "
                  f"last step {int(steps[bad[-1]])}) and finite after: judged on its finite steps")
        keep = [i for i in range(n) if math.isfinite(losses[i])]
        steps, losses = array("d", (steps[i] for i in keep)), array("d", (losses[i] for i in keep))
    for step, val in sorted(found.val.items()):
        if not math.isfinite(val):
            return verdict("nan", f"val_loss became {_bad_word(val)} at step {step}")
    m = len(losses)
    zero_from = m
    while zero_from and losses[zero_from - 1] == 0.0:
        zero_from -= 1
    if zero_from < m:
        return verdict("unknown", passed,
                       f"loss stuck at exactly 0.0 from step {int(steps[zero_from])} to the job's last logged step "
                       f"({m - zero_from:,} steps) and no accuracy is printed to tell a perfect fit from a collapse: "
                       "a loss that no longer measures the model is what pure fp16 training gave the seed "
                       "(docs/seed-collapse.md)")
    items, names = [], []  # span k as EpochMetrics(epoch=k, its medians), and its name
    bounds = [round(k * m / min(STEP_SPANS, m)) for k in range(min(STEP_SPANS, m) + 1)]
    for k, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        first, last = int(steps[lo]), int(steps[hi - 1])
        vals = [v for s, v in found.val.items() if first <= s <= last]
        items.append(EpochMetrics(epoch=k, loss=statistics.median(losses[lo:hi]),
                                  val_loss=statistics.median(vals) if vals else None))
        names.append(f"step {first}" if first == last else f"median of steps {first}-{last}")

    def at(e: EpochMetrics) -> str:
        return names[e.epoch]

    diverged = _divergence_finding(items, at)
    if diverged:
        return verdict("diverged", passed, diverged)
    fell, trend = _trend_finding(items, at, unit="step", flat=STEP_FLAT)
    zero = ("the loss was exactly 0.0 at some steps: suspicious unless the model fits perfectly"
            if any(loss == 0.0 for loss in losses) else None)
    status = "healthy" if fell else NO_LEARNING if len(items) > 1 else "unknown"
    return verdict(status, passed, trend, zero, _overfit_finding(items, at))


def _parse_segments(segments: Iterable[str]) -> list[EpochMetrics]:
    epochs: dict[int, _EpochRecords] = {}
    # Keras 3 prints no "Epoch 1/1" header for a one-epoch fit(); records
    # before any header count as epoch 1, but only if no header ever comes.
    headerless = _EpochRecords()
    current: _EpochRecords = headerless
    for segment in segments:
        header = _EPOCH.match(segment)
        if header:
            current = epochs.setdefault(int(header.group(1)), _EpochRecords())
            continue
        values = _record(segment)
        if values is not None:
            current.add(segment, values)
    if not epochs:
        epochs[1] = headerless
    results = {epoch: rec.result() for epoch, rec in epochs.items()}
    return [EpochMetrics(epoch=e, **values) for e, values in sorted(results.items())
            if values is not None]


# --------------------------------------------------------------------------
# Assessment
# --------------------------------------------------------------------------


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _bad_word(value: float) -> str:
    return "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")




def _epoch(item: EpochMetrics) -> str:
    return f"epoch {item.epoch}"


def _nonfinite_finding(epochs: list[EpochMetrics], at: Callable[[EpochMetrics], str] = _epoch) -> str | None:
    for item in epochs:
        for name in ("loss", "val_loss"):
            value = getattr(item, name)
            if value is not None and not math.isfinite(value):
                return f"{name} became {_bad_word(value)} at {at(item)}"
    return None


def _collapse_finding(epochs: list[EpochMetrics], num_classes: int | None) -> str | None:
    """Loss exactly 0 with accuracy at/below chance.

    A real fit with zero loss has ~100% accuracy; zero loss at chance accuracy
    means the loss no longer measures the model (in the seed, most likely NaN
    outputs clipped to probability 1.0, see docs/seed-collapse.md).
    """
    stuck_from = None
    for item in epochs:  # the trailing run of epochs whose loss is exactly 0
        stuck_from = (stuck_from or item) if item.loss == 0.0 else None
    if stuck_from is None:
        return None
    final = epochs[-1]
    accuracy = final.accuracy
    if accuracy is None:
        accuracy = final.val_accuracy
    if accuracy is None:
        return None
    if num_classes:
        chance = 1.0 / num_classes
        if accuracy >= CHANCE_MULTIPLE * chance:
            return None
        versus = f"chance for {num_classes} classes is {_pct(chance)}"
    else:
        if accuracy >= COLLAPSE_ACCURACY_NO_CLASSES:
            return None
        versus = f"below {_pct(COLLAPSE_ACCURACY_NO_CLASSES)} with a zero loss"
    return (f"loss stuck at exactly 0.0 from epoch {stuck_from.epoch} while accuracy is {_pct(accuracy)} "
            f"({versus}): training collapsed — typical of pure fp16 training, "
            f"see docs/seed-collapse.md")


def _divergence_finding(epochs: list[EpochMetrics], at: Callable[[EpochMetrics], str] = _epoch) -> str | None:
    losses = [e for e in epochs if _finite(e.loss)]
    if len(losses) < 2:
        return None
    first, last = losses[0], losses[-1]
    best = min(losses, key=lambda e: e.loss)  # type: ignore[arg-type, return-value]  # only epochs whose value is finite
    if last.loss > DIVERGE_FACTOR * best.loss and last.loss > first.loss:  # type: ignore[operator]  # the values compared are finite numbers here
        return (f"loss diverged: {last.loss:.4g} at {at(last)}, more than "
                f"{DIVERGE_FACTOR:g}x its minimum {best.loss:.4g} ({at(best)}) and above "
                f"{at(first)}'s {first.loss:.4g}")
    return None


def _overfit_finding(epochs: list[EpochMetrics], at: Callable[[EpochMetrics], str] = _epoch) -> str | None:
    """Rising val_loss while training is fine: informational, not unhealthy."""
    vals = [e for e in epochs if _finite(e.val_loss)]
    if len(vals) < 3:
        return None
    best = min(vals, key=lambda e: e.val_loss)  # type: ignore[arg-type, return-value]  # only epochs whose value is finite
    last = vals[-1]
    if best.epoch < last.epoch and last.val_loss > 1.2 * best.val_loss:  # type: ignore[operator]  # the values compared are finite numbers here
        return (f"val_loss rose from {best.val_loss:.4g} ({at(best)}) to {last.val_loss:.4g} "
                f"({at(last)}): overfitting, training itself is fine")
    return None


def _trend_finding(epochs: list[EpochMetrics], at: Callable[[EpochMetrics], str] = _epoch,
                   unit: str = "epoch", flat: float = 0.0) -> tuple[bool, str]:
    """(loss fell, by more than the share ``flat`` of where it began?, one-line summary of the training loss)."""
    first, last = epochs[0], epochs[-1]
    if len(epochs) == 1:
        return True, f"1 {unit} only (loss {last.loss:.4g}): too short to judge a trend"
    fell = last.loss < first.loss * (1 - flat) if first.loss > 0 else last.loss < first.loss  # type: ignore[operator]  # the values compared are finite numbers here
    verb = "fell" if fell else "did not fall" + (f" by more than {flat:.0%}" if flat else "")
    text = f"loss {verb} from {first.loss:.4g} ({at(first)}) to {last.loss:.4g} ({at(last)})"
    if last.accuracy is not None:
        text += f"; accuracy {_pct(last.accuracy)}"
    if last.val_accuracy is not None:
        text += f", val_accuracy {_pct(last.val_accuracy)}"
    return fell, text


def assess(epochs: list[EpochMetrics], num_classes: int | None = None) -> HealthVerdict:
    """Judge a run from its per-epoch metrics (see the module docstring)."""
    epochs = sorted(epochs, key=lambda e: e.epoch)
    with_loss = [e for e in epochs if e.loss is not None]
    final = epochs[-1] if epochs else None
    if not with_loss:
        return HealthVerdict("unknown", ("no per-epoch loss found",), len(epochs), final)

    def verdict(status: str, *findings: str | None) -> HealthVerdict:
        return HealthVerdict(status, tuple(f for f in findings if f), len(epochs), final)

    nonfinite = _nonfinite_finding(with_loss)
    if nonfinite:
        return verdict("nan", nonfinite)
    collapse = _collapse_finding(with_loss, num_classes)
    if collapse:
        return verdict("collapsed", collapse)
    diverged = _divergence_finding(with_loss)
    if diverged:
        return verdict("diverged", diverged)
    fell, trend = _trend_finding(with_loss, flat=STEP_FLAT)
    zero = None
    if any(e.loss == 0.0 for e in with_loss):
        zero = "loss is exactly 0.0 in some epochs: suspicious unless the model fits perfectly"
    status = "healthy" if fell else NO_LEARNING if len(with_loss) > 1 else "unknown"
    return verdict(status, trend, zero, _overfit_finding(with_loss))


def health_from_run(metrics_path: Path | None, log_text: str | None,
                    num_classes: int | None = None, log_paths: Iterable[Path] = ()) -> HealthVerdict:
    """Assess a wrapped run: its metrics JSONL when present and non-empty, else its log (``log_text``, or the
    files ``log_paths``, streamed): its epochs, else its per-step losses.

    A metrics file's start line may carry ``num_classes``; it is used when
    the caller does not give one.
    """
    epochs: list[EpochMetrics] = []
    if metrics_path is not None and Path(metrics_path).is_file() \
            and Path(metrics_path).stat().st_size > 0:
        epochs = parse_metrics_jsonl(metrics_path)
        if num_classes is None:
            declared = metrics_header(metrics_path).get("num_classes")
            num_classes = declared if isinstance(declared, int) and declared > 0 else None
    log_paths = [p for p in log_paths if Path(p).is_file()]
    if not epochs and log_text:
        epochs = parse_keras_log(log_text)
    elif not epochs:
        epochs = parse_keras_logs(log_paths)
    if epochs:
        return assess(epochs, num_classes)
    steps = parse_step_log(log_text) if log_text else parse_step_logs(log_paths)
    return assess_steps(steps) if len(steps) else assess(epochs, num_classes)
