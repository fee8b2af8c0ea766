"""Reproduce JAX persistent-compilation-cache regressions version by version."""

__version__ = "0.1.0"
