"""Demangle C++ kernel names (nvprof, ncu and CUPTI hand them over mangled), each distinct name once."""
from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache

try:  # cxxfilt calls libstdc++'s __cxa_demangle in-process: no subprocess per name
    import cxxfilt as _cxxfilt
except Exception:  # pragma: no cover - depends on the machine
    _cxxfilt = None


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """Return the demangled name, or the name itself when it is not mangled or cannot be demangled."""
    if not name.startswith("_Z"):
        return name
    if _cxxfilt is not None:
        try:
            return _cxxfilt.demangle(name, external_only=False)
        except Exception:  # noqa: BLE001 - cxxfilt raises its own InvalidName; any failure keeps the raw name
            return name
    return _cplusfilt(name)


def _cplusfilt(name: str) -> str:
    exe = shutil.which("c++filt")
    if exe is None:
        return name
    out = subprocess.run([exe, name], capture_output=True, text=True, check=False).stdout.strip()
    return out or name
