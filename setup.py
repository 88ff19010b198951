"""The optional C parts of the package: storage._native (the listpack loops of the bulk
paths) and protocol._native (the RESP frame check); each file's top comment says how.

Everything else is in pyproject.toml. optional=True: without a C compiler or Python's
headers the install goes on, and storage/native.py and protocol/native.py fall back to the
Python loops."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("storage._native", ["storage/_native.c"], optional=True,
                  extra_compile_args=["-O2"]),
        Extension("protocol._native", ["protocol/_native.c"], optional=True,
                  extra_compile_args=["-O2"]),
    ],
)
