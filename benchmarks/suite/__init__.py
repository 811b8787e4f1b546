"""The benchmark suite's machinery: the records a benchmark returns (types), how one is timed in a fresh process
(measure), the list of benchmarks (registry), two results side by side (compare) and the tables of
docs/performance.md written from the results (docs). `python -m benchmarks` is its command line."""
