"""The numerics recorder in Keras 3 jobs, any backend (tracer/numerics.py says what is recorded and where).

``keras.Model.fit`` is wrapped to add one callback. Keras compiles the training step (a tf.function on TensorFlow,
jit on JAX), so its tensors cannot be read from Python while it runs; what is read around it instead:

- before a sampled step: the weights (kept, for the update), and a probe — the model called eagerly, in inference
  mode (no dropout, no statistics moved, no seed drawn), on the first rows of fit's own ``x`` — whose layer outputs
  are the step's activations and whose loss's gradients (TensorFlow's tape, torch's autograd, JAX's grad of the
  model's stateless call) the step's gradients;
- after every step: the loss (from fit's logs: Keras's running mean over the epoch, turned back into the step's),
  the loss scale and whether it skipped the update (a LossScaleOptimizer's inner iterations did not move), and one
  sum per weight, the cheap check that forces a step with a non-finite or newly all-zero weight to be written whole
  (its weights and optimizer state; its update only when the step was sampled: the weights are read before sampled
  steps only) and the step after it;
- after a sampled (or bad) step: the weights, the update (new − old) with its ratio to the weight, and the
  optimizer's state variables, each matched to its weight by the name Keras gives it (``{weight path}_{name}``).
"""
# ruff: noqa: BLE001
from __future__ import annotations

import math
import time
from typing import Any

from nvprof_wrap.tracer import numerics
from nvprof_wrap.tracer.numerics import np_stats

PROBE_ROWS = 256  # the most rows of x the probe runs on
_probe: dict[int, Any] = {}  # id(layer) → its output, while a probe runs (None: no probe running)
_probing = [False]


def patch(keras: Any) -> None:
    rec = numerics.recorder()
    model_cls = getattr(keras, "Model", None)
    layer_cls = getattr(getattr(keras, "layers", None), "Layer", None)
    if rec is None or model_cls is None or layer_cls is None or getattr(model_cls.fit, "_numerics", False):
        return
    original_fit, original_call = model_cls.fit, layer_cls.__call__

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original_call(self, *args, **kwargs)
        if _probing[0]:
            _probe[id(self)] = out
        return out

    def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            args, kwargs = _with_callback(keras, self, args, kwargs)
        except Exception as e:
            numerics._warn(f"not recording this fit() ({type(e).__name__}: {e})")
        return original_fit(self, *args, **kwargs)

    __call__.__wrapped__ = original_call  # type: ignore[attr-defined]  # functools' marker, not in a function's type
    fit.__wrapped__ = original_fit  # type: ignore[attr-defined]  # the same
    fit._numerics = True  # type: ignore[attr-defined]  # patched once, whatever imports keras again
    layer_cls.__call__ = __call__  # patched in place on purpose: the user's code makes the instances
    model_cls.fit = fit


_FIT_ARGS = ("x", "y", "batch_size", "epochs", "verbose", "callbacks")


def _with_callback(keras: Any, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    rec = numerics.recorder()
    if rec is None or not rec.claim("keras"):
        return args, kwargs
    given = dict(zip(_FIT_ARGS, args))
    given.update(kwargs)
    rows = min(given.get("batch_size") or 32, PROBE_ROWS)
    probe = (_head(given.get("x"), rows), _head(given.get("y"), rows))
    callback = _callback_class(keras)(keras, model, rec, probe)
    callbacks = [*(given.get("callbacks") or []), callback]
    if len(args) > _FIT_ARGS.index("callbacks"):
        args = (*args[:5], callbacks, *args[6:])
    else:
        kwargs = {**kwargs, "callbacks": callbacks}
    return args, kwargs


def _head(data: Any, rows: int) -> Any:
    """The first ``rows`` rows of fit's x or y (arrays, lists, tuples or dicts of them); None for anything else
    (a dataset, a generator: reading one would take a batch from the job)."""
    if data is None:
        return None
    if isinstance(data, dict):
        out = {k: _head(v, rows) for k, v in data.items()}
        return None if any(v is None for v in out.values()) else out
    if isinstance(data, (list, tuple)) and data and not isinstance(data[0], (int, float)):
        parts = [_head(v, rows) for v in data]
        return None if any(p is None for p in parts) else type(data)(parts)
    if hasattr(data, "shape") and hasattr(data, "__getitem__") and len(getattr(data, "shape", ())) >= 1:
        return data[:rows]
    return None


def _leaves(layer: Any) -> list[Any]:
    inner = getattr(layer, "layers", None)
    if isinstance(inner, list) and inner:
        return [leaf for sub in inner for leaf in _leaves(sub)]
    return [layer]


def _first_tensor(out: Any) -> Any:
    while isinstance(out, (list, tuple)) and out:
        out = out[0]
    if isinstance(out, dict) and out:
        return _first_tensor(next(iter(out.values())))
    return out


def _callback_class(keras: Any) -> type:
    base = keras.callbacks.Callback

    class NumericsCallback(base):  # type: ignore[misc, valid-type]  # keras ships no types: its Callback is Any
        def __init__(self, keras_module: Any, model: Any, rec: numerics.Recorder, probe: tuple[Any, Any]) -> None:
            super().__init__()
            self.keras, self.fit_model, self.rec, self.probe = keras_module, model, rec, probe
            self.ready = False
            self.whole = False
            self.old: dict[str, Any] = {}
            self.seen_bad: set[str] = set()
            self.loss_sum = 0.0
            self.inner_iter: float | None = None
            self.jax_grad: Any = None  # the compiled probe (JAX): _jax_gradients
            self.jax_layers: list[Any] = []  # the layers whose outputs it gives, in its order
            self.jax_sums: Any = None  # the compiled cheap check's sums (JAX): _sums

        # ------------------------------------------------------------------ what the model has, once built
        def _setup(self) -> None:
            model, rec = self.fit_model, self.rec
            leaves = [layer for layer in _leaves(model) if getattr(layer, "name", None)]
            names = numerics.spread([layer.name for layer in leaves], rec.max_layers)
            self.layers = [layer for layer in leaves if layer.name in set(names)]
            # (layer name, weight name, variable) of each sampled layer's trainable weights
            self.weights = [(layer.name, f"{layer.name}/{v.name}", v) for layer in self.layers
                            for v in getattr(layer, "trainable_weights", [])]
            policy = getattr(getattr(model, "dtype_policy", None), "name", None) or \
                self.keras.mixed_precision.global_policy().name
            rec.start(self.keras.backend.backend(), str(policy), names)
            self.ready = True

        def _optimizer(self) -> tuple[Any, Any]:
            """(the optimizer that holds the state, the LossScaleOptimizer around it or None)."""
            opt = getattr(self.fit_model, "optimizer", None)
            inner = getattr(opt, "inner_optimizer", None)
            return (inner, opt) if inner is not None else (opt, None)

        def _states(self) -> list[tuple[str, str, str, Any]]:
            """(layer, weight name, state name, variable) of the optimizer's state of each sampled weight."""
            opt, _ = self._optimizer()
            out = []
            by_prefix = {v.path.replace("/", "_") + "_": (layer, name) for layer, name, v in self.weights}
            for sv in getattr(opt, "variables", []) or []:
                sname = str(getattr(sv, "name", ""))
                hits = [p for p in by_prefix if sname.startswith(p)]
                if hits:
                    prefix = max(hits, key=len)
                    out.append((*by_prefix[prefix], sname[len(prefix):], sv))
            return out

        # ------------------------------------------------------------------ around each step
        def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
            t0 = time.perf_counter()
            try:
                if not self.ready:
                    self._setup()
                step = self.rec.steps
                self._synced()
                self.whole = self.rec.sampled(step)
                self.old = {}
                if self.whole:  # (reading every weight before every step would cost more than the budget allows)
                    self.old = {name: self._numpy(v) for _, name, v in self.weights}
                    self._run_probe(step)
                _, scaler = self._optimizer()
                self.inner_iter = self._value(self._optimizer()[0].iterations) if scaler is not None else None
            except Exception as e:
                self._stop(e)
            self.rec.overhead_s += time.perf_counter() - t0

        def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
            t0 = time.perf_counter()
            try:
                if self.ready:
                    self._synced()
                    self._after(batch, logs or {})
            except Exception as e:
                self._stop(e)
            self.rec.overhead_s += time.perf_counter() - t0

        def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            self.loss_sum = 0.0

        def _after(self, batch: int, logs: dict[str, Any]) -> None:
            rec, step = self.rec, self.rec.steps
            mean = numerics.finite_or_none(logs.get("loss"))
            loss = None if mean is None else mean * (batch + 1) - self.loss_sum  # the step's, from the running mean
            self.loss_sum = 0.0 if mean is None else mean * (batch + 1)
            inner, scaler = self._optimizer()
            scale = skipped = None
            if scaler is not None:
                scale = self._value(getattr(scaler, "dynamic_scale", None))
                skipped = self.inner_iter is not None and self._value(inner.iterations) == self.inner_iter
            rec.loss(step, loss if mean is not None else logs.get("loss"), scale, skipped)
            new_bad = self._news(mean is None, "loss") | self._cheap_check()
            if self.whole or new_bad:
                for layer, name, v in self.weights:
                    new = self._numpy(v)
                    rec.tensor(step, "update", layer, "weight", name, np_stats(new))
                    old = self.old.get(name)
                    if old is not None and old.shape == new.shape:
                        upd = new.astype("float32") - old.astype("float32")
                        wmax = float(abs(old.astype("float32")).max()) if old.size else 0.0
                        umax = float(abs(upd).max()) if upd.size else 0.0
                        ratio = umax / wmax if wmax > 0 else (None if umax == 0 else float("inf"))
                        stats = np_stats(upd, str(new.dtype))
                        rec.tensor(step, "update", layer, "update", name, stats, ratio)
                for layer, name, state, sv in self._states():
                    rec.tensor(step, "update", layer, "optimizer_state", f"{name}:{state}", np_stats(self._numpy(sv)))
            if new_bad:
                rec.forced.add(step + 1)  # the next step's forward shows what the bad values did
            rec.end_step(step)

        def _synced(self) -> None:
            """The model's variables given their values (JAX): Keras's JAX trainer keeps the step's state apart and
            empties the variables during fit, so reading one raised TypeError and the recording stopped after its
            first step; jax_state_sync puts the state back in them, as Keras's own callbacks do through .model."""
            sync = getattr(self.fit_model, "jax_state_sync", None)
            if sync is not None:
                sync()

        def _news(self, is_bad: bool, what: str) -> bool:
            """Whether ``what`` went bad this step (the first time only: a NaN that stays forces nothing more)."""
            if not is_bad or what in self.seen_bad:
                return False
            self.seen_bad.add(what)
            return True

        def _cheap_check(self) -> bool:
            """One sum per weight (one pass, no copy): a weight that became non-finite, or all zeros, this step. A sum
            of 0 is confirmed on the absolute values; a sum that overflowed only forces one step to be written."""
            ops, found = self.keras.ops, False
            for (_, name, v), total in zip(self.weights, self._sums()):
                found |= self._news(not math.isfinite(total), f"{name} non-finite")
                if total == 0:
                    found |= self._news(float(self._numpy(ops.max(ops.abs(v)))) == 0, f"{name} zeros")
            return found

        def _sums(self) -> list[float]:
            """Each sampled weight's sum (ops.sum, in its own dtype). On JAX one compiled call gives them all, read
            back at once: eagerly each sum of a new shape compiled on first use and each was a read of its own."""
            values = [v for _, _, v in self.weights]
            if self.keras.backend.backend() == "jax":
                import jax

                if self.jax_sums is None:
                    ops = self.keras.ops
                    self.jax_sums = jax.jit(lambda arrays: [ops.sum(a) for a in arrays])
                return [float(t) for t in jax.device_get(self.jax_sums([v.value for v in values]))]
            return [float(self._numpy(self.keras.ops.sum(v))) for v in values]

        def _run_probe(self, step: int) -> None:
            x, y = self.probe
            if x is None:
                return
            grads = self._probe_gradients(x, y)
            for layer in self.layers:
                out = _first_tensor(_probe.pop(id(layer), None))
                if out is not None:
                    rec_stats = np_stats(self._numpy(out))
                    self.rec.tensor(step, "forward", layer.name, "activation", "output", rec_stats)
            _probe.clear()
            for (layer, name, _), g in zip(self.weights, grads):
                if g is not None:
                    self.rec.tensor(step, "backward", layer, "gradient", name, np_stats(self._numpy(g)))

        def _probe_gradients(self, x: Any, y: Any) -> list[Any]:
            """The layer outputs (into _probe) and the loss's gradients for the sampled weights, from one eager call
            in inference mode; no gradients where the backend or the loss does not allow them."""
            model, backend = self.fit_model, self.keras.backend.backend()
            loss_fn = self._loss_fn() if y is not None else None
            variables = [v for _, _, v in self.weights]
            if loss_fn is not None and backend == "jax":
                return self._jax_gradients(x, y, loss_fn, variables)
            _probing[0] = True
            try:
                if loss_fn is not None and backend == "tensorflow":
                    import tensorflow as tf

                    with tf.GradientTape() as tape:
                        loss = self.keras.ops.mean(loss_fn(y, model(x, training=False)))
                    return list(tape.gradient(loss, variables))
                if loss_fn is not None and backend == "torch":
                    import torch

                    with torch.enable_grad():
                        loss = self.keras.ops.mean(loss_fn(y, model(x, training=False)))
                        params = [v.value for v in variables]
                        return list(torch.autograd.grad(loss, params, allow_unused=True))
                model(x, training=False)
            finally:
                _probing[0] = False
            return []

        def _jax_gradients(self, x: Any, y: Any, loss_fn: Any, variables: list[Any]) -> list[Any]:
            """The probe on JAX, which has no tape, in one compiled call: the model's stateless call in inference
            mode, its sampled layers' outputs (into _probe, as the eager call's) and the loss's gradients for the
            trainable variables (jax.grad, the outputs as its aux); None for a sampled weight that is not trainable.
            Compiled once (jax.jit) and kept. Taken op by op, the first step's gradients cost 3.4 s (each operation
            compiled on its first use); the eager forward call beside the compiled gradients still compiled each of
            its operations on the first probe (0.6 s of the seed's 1.9 s recording on this CPU; on the H200 the
            recorder took 5.1-5.3 s of a 12 s job). Compiled, the outputs are those of the code XLA runs, as the
            training step's are (Keras compiles it too)."""
            import jax

            model = self.fit_model
            if self.jax_grad is None:
                layers = list(self.layers)

                def loss_of(values: list[Any], fixed: list[Any], x: Any, y: Any) -> tuple[Any, list[Any]]:
                    _probe.clear()
                    _probing[0] = True
                    try:  # traced once: the hooks see the layers' outputs as the traced values they return
                        pred, _ = model.stateless_call(values, fixed, x, training=False)
                    finally:
                        _probing[0] = False
                    outputs = [_first_tensor(_probe.pop(id(layer), None)) for layer in layers]
                    _probe.clear()
                    return self.keras.ops.mean(loss_fn(y, pred)), outputs

                self.jax_layers = layers
                self.jax_grad = jax.jit(jax.grad(loss_of, has_aux=True))
            trainable = list(model.trainable_variables)
            grads, outputs = self.jax_grad([v.value for v in trainable],
                                           [v.value for v in model.non_trainable_variables], x, y)
            for layer, out in zip(self.jax_layers, outputs):
                if out is not None:
                    _probe[id(layer)] = out
            of = {id(v): g for v, g in zip(trainable, grads)}
            return [of.get(id(v)) for v in variables]

        def _loss_fn(self) -> Any:
            loss = getattr(self.fit_model, "loss", None)
            if loss is None or isinstance(loss, (dict, list, tuple)):
                return None
            return self.keras.losses.get(loss) if isinstance(loss, str) else loss

        def _numpy(self, t: Any) -> Any:
            return self.keras.ops.convert_to_numpy(t)

        def _value(self, v: Any) -> float | None:
            return None if v is None else float(self._numpy(v))

        def _stop(self, e: Exception) -> None:
            numerics._warn(f"stopped recording ({type(e).__name__}: {e})")
            self.ready = False
            self.on_train_batch_begin = self.on_train_batch_end = lambda *a, **k: None  # type: ignore[method-assign]  # off for good

    return NumericsCallback
