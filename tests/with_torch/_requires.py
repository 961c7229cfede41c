"""The guard every module of tests/with_torch starts with: skip it when its packages are absent.

The book's environment has no torch; ``make test-torch`` installs it, transformers and the other
rotary libraries into ``.venv-torch``. A directory named like a package (a namespace package,
e.g. a checkout folder called ``torch``) does not count as installed.
"""

import importlib.util

import pytest


def installed(name: str) -> bool:
    """A real installed package, checked without importing it."""
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.origin not in (None, "namespace")


def require(*names: str) -> None:
    """Skip the calling test module unless every package in ``names`` is installed."""
    missing = [n for n in names if not installed(n)]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (make test-torch installs them)", allow_module_level=True)
