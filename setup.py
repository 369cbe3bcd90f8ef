"""The compiled tokenizer (rocrtrace/parse/_scan.c) is built here, at install,
with the system compiler.  It is optional: when it cannot be built the
Python grammar, which defines the same results, parses every line."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("rocrtrace.parse._scan", ["rocrtrace/parse/_scan.c"],
                             extra_compile_args=["-O2", "-Wall"], optional=True)])
