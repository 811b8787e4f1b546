"""Test stand-in for NVIDIA's cupti-python package; the bindings are in the submodule ``cupti.cupti``
(as in the real wheel, used as ``from cupti import cupti``). No GPU, no libcupti: ``rawlib.py`` stands in for
the libcupti functions the tracer calls through ctypes, writing raw activity buffers in the struct layouts of
``records.py`` (ctypes mirrors of cupti_activity.h, made by ``make_records.py``)."""
