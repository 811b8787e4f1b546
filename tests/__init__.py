"""The tests, one folder per stage of the package in the order a capture flows through it (tests/README.md)."""
