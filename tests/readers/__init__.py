"""Every capture format read into a Capture, and the bounds on reading (nvprof_wrap/readers)."""
