"""The examples in the docstrings run and print what they say (doctest).

The main public functions carry examples: ``frequencies``, ``apply_rope``, ``kernel``,
``near_collisions``, ``geometry_audit``, ``read_config`` (and ``extension_schedule``,
``rotate_pairs``). Outputs are rounded in the examples, so they do not depend on the last digits
of a float.
"""

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import ropegeo

PACKAGE = Path(ropegeo.__file__).parent


def _modules_with_examples() -> list[str]:
    """Every ropegeo module whose source holds a doctest example that runs (found from the text, not by import)."""
    names = []
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="ropegeo."):
        rel = info.name.split(".", 1)[1].replace(".", "/")
        path = PACKAGE / (rel + "/__init__.py" if info.ispkg else rel + ".py")
        prompts = re.findall(r"^\s*>>> .*$", path.read_text(), flags=re.M) if path.exists() else []
        if any("+SKIP" not in line for line in prompts):  # a module whose examples all skip runs none
            names.append(info.name)
    return sorted(names)


MODULES = _modules_with_examples()


def test_every_module_with_an_example_is_run():
    # the core modules whose main functions carry examples are among them
    for name in ("ropegeo.frequencies", "ropegeo.rotation", "ropegeo.geometry", "ropegeo.gates.procedure", "ropegeo.models.manifest",
                 "ropegeo.gates.a.gate", "ropegeo.gates.b.rule", "ropegeo.margins", "ropegeo.gates.verdicts"):
        assert name in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


def test_the_main_functions_have_examples():
    from ropegeo.frequencies import frequencies
    from ropegeo.geometry import kernel, near_collisions
    from ropegeo.gates.procedure import geometry_audit
    from ropegeo.models.manifest import read_config
    from ropegeo.rotation import apply_rope

    for f in (frequencies, apply_rope, kernel, near_collisions, geometry_audit, read_config):
        assert ">>> " in f.__doc__, f.__name__


def test_every_public_entry_point_of_the_core_has_an_example():
    """What ``import ropegeo`` hands on (``ropegeo.__all__``) each carries a doctest example."""
    import inspect

    bare = [n for n in ropegeo.__all__ if ">>>" not in (inspect.getdoc(getattr(ropegeo, n)) or "")]
    assert not bare, f"core entry points without an example: {bare}"
