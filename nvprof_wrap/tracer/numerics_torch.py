"""The numerics recorder in PyTorch jobs (tracer/numerics.py says what is recorded and where).

- activations: a global forward hook on every module call (leaf modules only; Keras layers on the torch backend are
  Keras's to record), computed on the device in the sampled steps and read at the step's end;
- gradients, weights, the update and ``optimizer.state``: torch.optim's global step pre/post hooks (the first
  optimizer that steps: a second one, a GAN's, would count every step twice);
- the loss: the tensor ``.backward()`` is called on (unscaled: what ``GradScaler.scale`` was given);
- ``torch.amp.GradScaler``: its scale after ``update()`` and whether ``step()`` skipped the optimizer (found
  non-finite gradients); with a scaler the step ends at ``update()``, else at the optimizer's step.
A step is named from 0; the module and parameter names are the paths from the model that was called first
(``encoder.layers.0.fc1``). One cheap check per step — the loss, and the largest |weight| (one fused pass over all
weights) — forces a step to be recorded whole after a bad one. An unsampled step waits for nothing: its values stay on
the device and are read a few steps later (tracer/numerics_torch_flags.py), and the forward hooks are registered only
for the steps recorded whole (a module call without global hooks takes torch's fast path).
"""
# ruff: noqa: BLE001
from __future__ import annotations

import importlib
import math
import time
import weakref
from typing import Any

from nvprof_wrap.tracer import numerics
from nvprof_wrap.tracer.numerics_torch_flags import DeviceValues


class _State:
    def __init__(self, torch: Any, rec: numerics.Recorder) -> None:
        self.torch, self.rec = torch, rec
        self.depth = 0
        self.roots: list[Any] = []  # weakrefs of the modules called at depth 0
        self.names: dict[int, str] = {}  # id(module) → path
        self.params: dict[int, tuple[str, str]] = {}  # id(parameter) → (module path, parameter name)
        self.sampled: set[str] | None = None
        self.step_of_whole, self.whole = -1, False
        self.acts: dict[int, Any] = {}  # id(module) → (dtype, n, stats on the device), this step
        self.grads: list[tuple[str, str, Any]] = []
        self.old: dict[int, Any] = {}
        self.owner: Any = None
        self.loss: Any = None
        self.scaled: tuple[int, Any] | None = None  # (id of GradScaler.scale's result, the loss it was given)
        self.scaler_seen = False
        self.opt_ran = False  # the owner optimizer's step ran (a GradScaler that skips it runs no hook)
        self.found: Any = None  # the GradScaler's found-inf count of this step, on the device
        self.scale: Any = None  # the loss scale after update(): a device tensor or a float
        self.wmax: Any = None  # the largest |weight| after this step's update, on the device
        self.policy = "fp32"
        self.dead = False
        self.was_bad = False
        self.values = DeviceValues(torch)
        self.hooks: list[Any] | None = None  # the forward hooks' handles while registered
        self.forward_hooks: tuple[Any, Any] | None = None

    # ------------------------------------------------------------------ sampling and names
    def is_whole(self) -> bool:
        step = self.rec.steps
        if self.step_of_whole != step:
            self.step_of_whole, self.whole = step, self.rec.sampled(step)
        return self.whole

    def name_modules(self) -> None:
        if not self.rec.claim("torch"):  # a Keras job on the torch backend: Keras's recorder has this process
            self.dead = True
            return
        roots = [m for m in (r() for r in self.roots) if m is not None]
        for i, root in enumerate(roots):
            prefix = "" if len(roots) == 1 else f"{type(root).__name__}{i}."
            for path, module in root.named_modules():
                self.names.setdefault(id(module), (prefix + path).rstrip(".") or type(root).__name__)
            for pname, p in root.named_parameters():
                path = pname.rpartition(".")[0]
                self.params.setdefault(id(p), ((prefix + path).rstrip(".") or type(root).__name__, prefix + pname))
        if self.sampled is None and roots:
            leaves = [self.names[id(m)] for root in roots for m in root.modules() if _leaf(m)]
            chosen = numerics.spread(list(dict.fromkeys(leaves)), self.rec.max_layers)
            self.sampled = set(chosen)
            self.rec.start(None, self.policy, chosen)

    def wanted(self, p: Any) -> tuple[str, str] | None:
        got = self.params.get(id(p))
        return got if got is not None and self.sampled is not None and got[0] in self.sampled else None

    # ------------------------------------------------------------------ statistics on the device
    def stats(self, t: Any) -> tuple[str, int, Any] | None:
        torch = self.torch
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0:
            return None
        dtype = str(t.dtype).replace("torch.", "")
        tiny = numerics.TINY.get(dtype)
        if tiny is None:
            return None
        with torch.no_grad():
            x = t.detach()
            a = x.abs()
            fin = torch.isfinite(a)
            vals = torch.stack([torch.where(fin, a, torch.zeros((), dtype=a.dtype, device=a.device)).max().double(),
                                (x == 0).sum().double(), ((a > 0) & (a < tiny) & fin).sum().double(),
                                torch.isnan(x).sum().double(), torch.isinf(x).sum().double()])
        return dtype, t.numel(), vals

    def fields(self, got: tuple[str, int, Any] | None) -> dict[str, Any] | None:
        if got is None:
            return None
        dtype, n, vals = got
        mx, zeros, sub, nan, inf = vals.tolist()
        finite = n - int(nan) - int(inf)
        return {"dtype": dtype, "n": n, "max_abs": mx if finite else None, "zeros": zeros / n,
                "subnormal": sub / n, "nan": int(nan), "inf": int(inf)}

    # ------------------------------------------------------------------ the step's end
    def end_step(self) -> None:
        rec, step = self.rec, self.rec.steps
        if self.sampled is None:
            self.name_modules()
        if self.dead:
            self.set_hooks(False)
            return
        whole = self.is_whole()
        self.values.add(step, self.loss, self.wmax, self.scale, self.found, self.scaler_seen)
        if whole:  # its statistics wait for the device anyway: every step's values now, its loss before its tensors
            self.read_values(step, wait=True)
        for mid, got in self.acts.items():
            name = self.names.get(mid)
            if name is not None and self.sampled is not None and name in self.sampled:
                rec.tensor(step, "forward", name, "activation", "output", self.fields(got))
        for layer, pname, got in self.grads:
            rec.tensor(step, "backward", layer, "gradient", pname, self.fields(got))
        if not whole:
            self.read_values(step, wait=False)
        self.acts, self.grads, self.old, self.loss, self.found, self.wmax = {}, [], {}, None, None, None
        rec.end_step(step)
        self.set_hooks(self.is_whole())

    def read_values(self, step: int, wait: bool) -> None:
        """The loss records of the steps whose values have landed (``wait``: of all), in step order; a bad one
        forces the next step to be recorded whole (the first bad step only: a scale that keeps falling forces nothing
        more) — the step after this one where its values were read late."""
        for v in self.values.ready(wait):
            self.rec.loss(v.step, v.loss, v.scale, v.skipped)
            if v.bad and not self.was_bad:
                self.rec.forced.add(step + 1)
            self.was_bad = v.bad

    def drain(self) -> None:
        """At the process's end: the steps not yet read."""
        if not self.dead:
            self.read_values(self.rec.steps, wait=True)

    def set_hooks(self, on: bool) -> None:
        """The forward hooks, registered while modules are still to be named or for a step recorded whole."""
        on = not self.dead and (on or self.sampled is None)
        if on and self.hooks is None and self.forward_hooks is not None:
            mod = self.torch.nn.modules.module
            self.depth = 0
            self.hooks = [mod.register_module_forward_pre_hook(self.forward_hooks[0]),
                          mod.register_module_forward_hook(self.forward_hooks[1])]
        elif not on and self.hooks is not None:
            for h in self.hooks:
                h.remove()
            self.hooks = None


def _leaf(module: Any) -> bool:
    return next(iter(module.children()), None) is None


def _keras_layer(module: Any) -> bool:
    return type(module).__module__.startswith("keras")


def patch(torch: Any) -> None:
    rec = numerics.recorder()
    if rec is None or getattr(torch, "_nvprof_wrap_numerics", False):
        return
    try:
        opt_mod = importlib.import_module("torch.optim.optimizer")  # torch.optim hides it (torch 2.11)
        pre, post = opt_mod.register_optimizer_step_pre_hook, opt_mod.register_optimizer_step_post_hook
        scaler_cls = importlib.import_module("torch.amp.grad_scaler").GradScaler
    except (ImportError, AttributeError) as e:
        numerics._warn(f"torch {getattr(torch, '__version__', '?')} not recorded ({type(e).__name__}: {e})")
        return
    torch._nvprof_wrap_numerics = True
    st = _State(torch, rec)
    rec.before_end.append(st.drain)

    def guard(fn: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            if st.dead:
                return None
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                st.dead = True
                numerics._warn(f"stopped recording ({type(e).__name__}: {e})")
                return None
            finally:
                rec.overhead_s += time.perf_counter() - t0
        return run

    @guard
    def before_forward(module: Any, args: Any) -> None:
        if st.depth == 0 and not _keras_layer(module) and all(r() is not module for r in st.roots):
            st.roots.append(weakref.ref(module))
        st.depth += 1

    @guard
    def after_forward(module: Any, args: Any, out: Any) -> None:
        st.depth = max(0, st.depth - 1)
        if _keras_layer(module) or not _leaf(module) or id(module) in st.acts or not st.is_whole():
            return
        if st.sampled is not None and st.names.get(id(module)) not in st.sampled:
            return
        for t in (out if isinstance(out, (list, tuple)) else (out,)):
            got = st.stats(t)
            if got is not None:
                st.acts[id(module)] = got
                _note_policy(torch, st)
                return

    @guard
    def before_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        owner = st.owner() if st.owner is not None else None
        if owner is None:
            st.owner = weakref.ref(optimizer)
        elif owner is not optimizer:
            return
        st.opt_ran = True
        if st.sampled is None:
            st.name_modules()
        if st.dead or not st.is_whole():
            return
        for group in optimizer.param_groups:
            for p in group["params"]:
                got = st.wanted(p)
                if got is None:
                    continue
                if p.grad is not None:
                    st.grads.append((*got, st.stats(p.grad)))
                st.old[id(p)] = p.detach().clone()

    @guard
    def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        if st.owner is None or st.owner() is not optimizer:
            return
        step, whole = rec.steps, st.is_whole()
        params = [p for g in optimizer.param_groups for p in g["params"]]
        st.wmax = _largest(torch, params)
        # A step found bad late (on a GPU) has its weights gone: they are written here only where the check reads
        # at once (on the CPU) or the step is recorded whole anyway.
        first_bad = (not whole and not st.was_bad and st.wmax is not None and st.wmax.device.type == "cpu"
                     and not math.isfinite(float(st.wmax.float().numpy())))
        if whole or first_bad:
            for p in params:
                got = st.wanted(p)
                if got is None:
                    continue
                layer, pname = got
                rec.tensor(step, "update", layer, "weight", pname, st.fields(st.stats(p)))
                old = st.old.get(id(p))
                if old is not None:
                    with torch.no_grad():
                        upd = p.detach().float() - old.float()
                        wmax, umax = old.float().abs().max().item(), upd.abs().max().item()
                    ratio = umax / wmax if wmax > 0 else (None if umax == 0 else float("inf"))
                    rec.tensor(step, "update", layer, "update", pname, _as(st.fields(st.stats(upd)), p), ratio)
                for sname, sv in optimizer.state.get(p, {}).items():
                    if isinstance(sv, torch.Tensor) and sv.is_floating_point() and sv.numel() > 1:
                        rec.tensor(step, "update", layer, "optimizer_state", f"{pname}:{sname}",
                                   st.fields(st.stats(sv)))
        if not st.scaler_seen:
            st.end_step()

    handles = [pre(before_step), post(after_step)]
    st.forward_hooks = (before_forward, after_forward)
    st.set_hooks(True)
    _patch_scaler(scaler_cls, st, guard)
    _patch_backward(torch, st, guard)
    st.handles = handles  # type: ignore[attr-defined]  # kept alive with the state


def _largest(torch: Any, params: list[Any]) -> Any:
    """The largest |x| over all ``params``, on their device, launched without waiting (a non-finite weight makes it
    inf or NaN; it cannot overflow, as a sum of squares could); None without parameters. On a GPU one fused pass
    (``_foreach_norm``, ord inf: a few kernels for all weights); on the CPU, where that runs a slow vector norm per
    weight, each weight's min and max (a quarter of the time; the same result)."""
    ps = [p.detach() for p in params if p.numel() > 0]
    if not ps:
        return None
    with torch.no_grad():
        norms: list[Any] = []
        if ps[0].device.type != "cpu":
            try:
                norms = list(torch._foreach_norm(ps, math.inf))
            except (RuntimeError, TypeError, AttributeError):  # a torch without it: the per-weight way below
                norms = []
        if not norms:  # NaN propagates through min and max
            ends = [m for p in ps for m in torch.aminmax(p)]
            try:
                return torch.stack(ends).abs().amax()
            except RuntimeError:  # weights on several devices
                return torch.stack([m.to(ps[0].device) for m in ends]).abs().amax()
        device = norms[0].device
        return torch.stack([n.to(device, non_blocking=True) for n in norms]).amax()


def _as(fields: dict[str, Any] | None, p: Any) -> dict[str, Any] | None:
    """An update computed in float32 stands for the weight's format: its dtype, its subnormals (kept as counted)."""
    if fields is not None:
        fields["dtype"] = str(p.dtype).replace("torch.", "")
    return fields


def _note_policy(torch: Any, st: _State) -> None:
    for device in ("cuda", "cpu"):
        try:
            if torch.is_autocast_enabled(device):
                dtype = str(torch.get_autocast_dtype(device)).replace("torch.", "")
                st.policy = {"float16": "autocast fp16", "bfloat16": "autocast bf16"}.get(dtype, f"autocast {dtype}")
                return
        except Exception:  # noqa: S112 - a torch without autocast on this device: the next one
            continue


def _patch_scaler(cls: Any, st: _State, guard: Any) -> None:
    scale, step, update = cls.scale, cls.step, cls.update

    def scale_(self: Any, outputs: Any) -> Any:
        out = scale(self, outputs)
        guard(_note_scaled)(out, outputs)
        return out

    def _note_scaled(out: Any, outputs: Any) -> None:
        if isinstance(outputs, st.torch.Tensor) and outputs.numel() == 1:
            st.scaled = (id(out), outputs.detach())

    def step_(self: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        st.scaler_seen, st.opt_ran = True, False
        out = step(self, optimizer, *args, **kwargs)
        guard(_after_scaler_step)(self, optimizer)
        return out

    def _after_scaler_step(self: Any, optimizer: Any) -> None:
        state = getattr(self, "_per_optimizer_states", {}).get(id(optimizer), {})
        found = [v for v in state.get("found_inf_per_device", {}).values() if isinstance(v, st.torch.Tensor)]
        st.found = found[0] if found else None  # read later (DeviceValues): a device's count, or their sum
        for v in found[1:]:
            st.found = st.found + v.to(found[0].device, non_blocking=True)
        if st.sampled is None:
            st.name_modules()
        owner = st.owner() if st.owner is not None else None
        # the optimizer's hooks did not run (the scaler skipped it): its gradients (unscaled) now
        if not st.opt_ran and (owner is None or owner is optimizer) and st.is_whole():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    got = st.wanted(p)
                    if got is not None and p.grad is not None:
                        st.grads.append((*got, st.stats(p.grad)))

    def update_(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = update(self, *args, **kwargs)
        guard(_after_update)(self)
        return out

    def _after_update(self: Any) -> None:
        scale = getattr(self, "_scale", None)  # get_scale() would wait for the device: the tensor, read later
        st.scale = (None if not self.is_enabled() else scale if isinstance(scale, st.torch.Tensor)
                    else float(self.get_scale()))  # copied by end_step's cat, before the next update changes it
        st.end_step()

    cls.scale, cls.step, cls.update = scale_, step_, update_


def _patch_backward(torch: Any, st: _State, guard: Any) -> None:
    backward = torch.Tensor.backward

    def backward_(self: Any, *args: Any, **kwargs: Any) -> Any:
        guard(_note_loss)(self)
        return backward(self, *args, **kwargs)

    def _note_loss(t: Any) -> None:
        if st.scaled is not None and st.scaled[0] == id(t):
            st.loss = st.scaled[1]
        elif t.numel() == 1:
            st.loss = t.detach()

    torch.Tensor.backward = backward_
