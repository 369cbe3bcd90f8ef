"""Test-only fake GPU device layer: fakedev.c (a preload library answering
KFD/DRM/accel ioctls like the kernel would), devns.py (a private /dev with
kfd, render and accel nodes), kfdcalls.py (real request codes and structs
from Python) and cbuild.py (compile small C programs and libraries)."""
