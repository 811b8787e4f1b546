"""Issue 15 on a GPU: the Python API with the real CUPTI tracer in this process (its ctypes binding; meta 'binding').

    python benchmarks/gpu/python_api_check.py OUT_DIR       (KERAS_BACKEND=torch; prints one JSON line per check)

1. profile() around fp16 and fp32 matmuls: tensor cores yes (nvjet, fp16) inside, and kernels before the window absent;
2. profile(steps=(3, 6)) with p.step(): only the window's steps, each an NVTX range 'step N' (per-op table);
3. the %%nvprof_wrap cell magic through IPython's own shell;
4. the Keras callback ProfileSteps on a small Keras 3 (torch backend) model in mixed precision.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def _meta(capture, key: str) -> str | None:
    """One meta value of the tracer's capture (a file, or the first cupti-*.sqlite in a folder)."""
    import sqlite3

    path = Path(capture)
    files = [path] if path.is_file() else sorted(path.glob("cupti-*.sqlite"))
    if not files:
        return None
    row = sqlite3.connect(files[0]).execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def say(check: str, **facts) -> None:
    print(json.dumps({"check": check, **facts}), flush=True)


def main(out: Path) -> int:
    import torch

    import nvprof_wrap

    a = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
    b32 = torch.randn(1024, 1024, device="cuda")
    (b32 @ b32).sum().item()  # before any window
    with nvprof_wrap.profile(out / "block") as p:
        for _ in range(10):
            _ = a @ a
        torch.cuda.synchronize()
    r = p.report
    say("profile block", verdict=r.verdict.tensor_cores, precisions=list(r.verdict.precisions),
        launches=r.verdict.launches, kernels=[k.name[:60] for k in r.kernels],
        fp32_gemm_outside=any("f32f32" in k.name or "sgemm" in k.name for k in r.kernels), capture=str(p.capture),
        binding=_meta(p.capture, "binding"))

    p = nvprof_wrap.profile(out / "steps", steps=(3, 6))
    with p:
        for step in range(8):
            for _ in range(step + 1):  # step N launches N+1 GEMMs: the window must hold 4 + 5 + 6
                _ = a @ a
            torch.cuda.synchronize()
            p.step()
    r = p.report
    say("profile steps", gemm_launches=sum(k.launches for k in r.kernels if k.tensor_core == "yes"),
        ops=sorted(o.op for o in r.ops))

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nvprof_wrap")
    shell.user_ns["a"] = a
    shell.run_cell_magic("nvprof_wrap", f"-o {out / 'magic'}", "for _ in range(5):\n    c = a @ a\n")
    rep = shell.user_ns["_nvprof_wrap_report"]
    say("cell magic", verdict=rep.verdict.tensor_cores, launches=rep.verdict.launches,
        html=rep._repr_html_().startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;'))

    import keras
    import numpy as np

    from nvprof_wrap.keras import ProfileSteps

    keras.mixed_precision.set_global_policy("mixed_float16")
    model = keras.Sequential([keras.Input((1024,)), keras.layers.Dense(512, activation="relu"),
                              keras.layers.Dense(46, activation="softmax", dtype="float32")])
    model.compile("rmsprop", "categorical_crossentropy")
    x = np.random.rand(512 * 12, 1024).astype("float32")
    y = keras.utils.to_categorical(np.arange(512 * 12) % 46, 46)
    cb = ProfileSteps(start=4, stop=8, folder=out / "keras")
    model.fit(x, y, batch_size=512, epochs=1, verbose=0, callbacks=[cb])
    r = cb.report
    say("keras callback", verdict=r.verdict.tensor_cores, precisions=list(r.verdict.precisions),
        tc_share=round(r.verdict.tc_fraction, 3), launches=r.verdict.launches,
        steps=sorted({o.op for o in r.ops if o.op.startswith("step")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
