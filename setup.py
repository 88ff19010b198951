"""The optional C part of the package: storage._native (see storage/_native.c).

Everything else is in pyproject.toml. optional=True: without a C compiler or Python's
headers the install goes on, and storage/native.py falls back to the Python loops."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("storage._native", ["storage/_native.c"], optional=True,
                  extra_compile_args=["-O2"]),
    ],
)
