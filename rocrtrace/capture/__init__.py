"""Capture: the LD_PRELOAD library (preload.c), its build, and the runner."""
