"""The numerics recorder in PyTorch jobs (tracer/numerics.py says what is recorded and where).

- activations: a global forward hook on every module call (leaf modules only; Keras layers on the torch backend are
  Keras's to record), computed on the device in the sampled steps and read at the step's end;
- gradients, weights, the update and ``optimizer.state``: torch.optim's global step pre/post hooks (the first
  optimizer that steps: a second one, a GAN's, would count every step twice);
- the loss: the tensor ``.backward()`` is called on (unscaled: what ``GradScaler.scale`` was given);
- ``torch.amp.GradScaler``: its scale after ``update()`` and whether ``step()`` skipped the optimizer (found
  non-finite gradients); with a scaler the step ends at ``update()``, else at the optimizer's step.
A step is named from 0; the module and parameter names are the paths from the model that was called first
(``encoder.layers.0.fc1``). One cheap check per step — the loss, and one finiteness test over all weights — forces
the next step to be recorded whole after a bad one.
"""
# ruff: noqa: BLE001
from __future__ import annotations

import importlib
import math
import time
import weakref
from typing import Any

from nvprof_wrap.tracer import numerics


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
        self.skipped: bool | None = None
        self.scale: float | None = None
        self.policy = "fp32"
        self.dead = False
        self.bad_weights = False
        self.was_bad = False

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
            return
        loss = self.loss.item() if self.loss is not None else None
        rec.loss(step, loss, self.scale, self.skipped)
        for mid, got in self.acts.items():
            name = self.names.get(mid)
            if name is not None and self.sampled is not None and name in self.sampled:
                rec.tensor(step, "forward", name, "activation", "output", self.fields(got))
        for layer, pname, got in self.grads:
            rec.tensor(step, "backward", layer, "gradient", pname, self.fields(got))
        bad = loss is None or not math.isfinite(loss) or bool(self.skipped) or self.bad_weights
        if bad and not self.was_bad:  # the first bad step only: a scale that keeps falling forces nothing more
            rec.forced.add(step + 1)
        self.was_bad = bad
        self.acts, self.grads, self.old, self.loss, self.skipped, self.bad_weights = {}, [], {}, None, None, False
        rec.end_step(step)


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
    mod = torch.nn.modules.module

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
        if st.sampled is None:
            st.name_modules()
        if st.dead:
            return
        whole = st.is_whole()
        for group in optimizer.param_groups:
            for p in group["params"]:
                got = st.wanted(p)
                if got is None:
                    continue
                if whole and p.grad is not None:
                    st.grads.append((*got, st.stats(p.grad)))
                if whole:
                    st.old[id(p)] = p.detach().clone()

    @guard
    def after_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        if st.owner is None or st.owner() is not optimizer:
            return
        step, whole = rec.steps, st.is_whole()
        params = [p for g in optimizer.param_groups for p in g["params"]]
        finite = torch.stack([torch.isfinite(p.detach()).all() for p in params]).all().item() if params else True
        st.bad_weights = not finite
        if whole or (not finite and not st.was_bad):
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

    handles = [mod.register_module_forward_pre_hook(before_forward), mod.register_module_forward_hook(after_forward),
               pre(before_step), post(after_step)]
    _patch_scaler(scaler_cls, st, guard)
    _patch_backward(torch, st, guard)
    st.handles = handles  # type: ignore[attr-defined]  # kept alive with the state


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
        st.scaler_seen = True
        out = step(self, optimizer, *args, **kwargs)
        guard(_after_scaler_step)(self, optimizer)
        return out

    def _after_scaler_step(self: Any, optimizer: Any) -> None:
        state = getattr(self, "_per_optimizer_states", {}).get(id(optimizer), {})
        found = state.get("found_inf_per_device", {})
        st.skipped = bool(found) and sum(v.item() for v in found.values()) > 0
        if st.sampled is None:
            st.name_modules()
        if st.skipped and st.is_whole():  # the optimizer's hooks did not run: its gradients (unscaled) now
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
        st.scale = float(self.get_scale()) if self.is_enabled() else None
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
