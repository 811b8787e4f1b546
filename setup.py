"""The optional compiled helpers: the Nsight Systems reader's passes (nvprof_wrap/timeline/_cattr.c; timeline/native.py
says why) and the Kineto reader's per-event loop (nvprof_wrap/readers/_ckineto.c). Everything else is in
pyproject.toml. Where they cannot be built (no C compiler, no Python headers) the install still succeeds and the
readers use their SQL and Python paths: the results are the same (tests/timeline/test_native.py,
tests/readers/test_kineto_native.py)."""
import os

from setuptools import Extension, setup

# NVPROF_WRAP_NO_NATIVE=1: a pure-Python wheel (py3-none-any) for another interpreter, e.g. the GPU machine's
# Python 3.12 (benchmarks/gpu/*.sh: NVPROF_WRAP_NO_NATIVE=1 python3 -m pip wheel --no-deps -w .whl .)
NATIVE = [] if os.environ.get("NVPROF_WRAP_NO_NATIVE") == "1" else [
    Extension("nvprof_wrap.timeline._cattr", ["nvprof_wrap/timeline/_cattr.c"], optional=True,
              extra_compile_args=["-O2"], libraries=["dl"]),
    Extension("nvprof_wrap.readers._ckineto", ["nvprof_wrap/readers/_ckineto.c"], optional=True,
              extra_compile_args=["-O2"])]
setup(ext_modules=NATIVE)
