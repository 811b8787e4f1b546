"""Test stand-in for NVIDIA's cupti-python package; the bindings are in the submodule ``cupti.cupti``
(as in the real wheel, used as ``from cupti import cupti``). No GPU, no libcupti."""
