"""rocrtrace: replay strace and preload traces of ROCm programs against models
of SVM ranges, fds and buffer handles, and report what went wrong."""
__version__ = "0.1.0"
