"""The optional compiled helper of the Nsight Systems reader (nvprof_wrap/readers/_cattr.c; readers/_native.py says
why). Everything else is in pyproject.toml. Where it cannot be built (no C compiler, no Python headers) the install
still succeeds and the readers use their SQL path: the results are the same (tests/readers/test_native.py)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("nvprof_wrap.readers._cattr", ["nvprof_wrap/readers/_cattr.c"], optional=True,
                             extra_compile_args=["-O2"], libraries=["dl"])])
