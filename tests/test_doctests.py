"""The examples in the docstrings run and print what they say (doctest).

The main public functions carry examples: ``frequencies``, ``apply_rope``, ``kernel``,
``near_collisions``, ``geometry_audit``, ``read_config`` (and ``extension_schedule``,
``rotate_pairs``). Outputs are rounded in the examples, so they do not depend on the last digits
of a float.
"""

import doctest
import importlib

import pytest

MODULES = ["ropegeo.frequencies", "ropegeo.rotation", "ropegeo.geometry", "ropegeo.scaling.schedule", "ropegeo._json",
           "ropegeo.audit", "ropegeo.manifest", "ropegeo.gate_a", "ropegeo.gate_b", "ropegeo.margins"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


def test_the_main_functions_have_examples():
    from ropegeo.frequencies import frequencies
    from ropegeo.geometry import kernel, near_collisions
    from ropegeo.audit import geometry_audit
    from ropegeo.manifest import read_config
    from ropegeo.rotation import apply_rope

    for f in (frequencies, apply_rope, kernel, near_collisions, geometry_audit, read_config):
        assert ">>> " in f.__doc__, f.__name__
