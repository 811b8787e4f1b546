"""The commands: arguments, outputs, exit codes (nvprof_wrap/cli)."""
