"""Analyses of a run: each answers one of the user's "why" questions from what the report already measured.

One module per analysis, each a pure function of typed inputs (the series' rows, the kernels' verdicts, the GPU)
to a typed result that report/types.py carries as one field of the Report (docs/architecture.md "Add an analysis"):
- peaks     the GPUs' dense peak rates per precision and memory bandwidth, as data (peaks.toml, with sources)
- budget    a step's wall time split into parts that add up to it: GPU busy by kind, GPU idle by what the host did
- ceiling   the speed-up a precision change can give at most (Amdahl over the budget's parts and the GPU's peaks)
- achieved  achieved TFLOP/s per precision against the GPU's peak, where the run holds the FLOPs
- numerics  why reduced precision broke training: the first bad tensor, the chain before it, the cause and the fix,
            from the numerics recorder's records (numerics_records: the records and their words)
Nothing here reads a store or a capture: report/build.py hands each analysis its inputs.
"""
