"""The system below everything: profiler tools found (tools.py), temporary folders (tempdirs.py), the life line to
the parent process (lifeline.py), forked workers (fork.py) and the limits on the work one input can cause
(limits.py)."""
