from hypothesis import HealthCheck, settings

# Deterministic property tests: the same examples on every run and every machine.
settings.register_profile(
    "ropegeo", derandomize=True, deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ropegeo")


# ---- pytest-xdist: what runs where (`make test` runs with `-n auto --dist loadgroup`) --------------

from pathlib import PurePosixPath  # noqa: E402

import pytest  # noqa: E402

#: Test files with the longest single tests (a training, a fresh virtual environment, a book
#: build): they are handed out first, so that no worker starts one of them while the other has
#: nothing left to do. Only the order changes; a name that matches nothing is ignored.
SLOW_FIRST = ("test_chapter07.py", "test_core_install.py", "test_chapter06_mechanisms.py",
              "test_chapter06_budgets.py", "test_chapter06.py", "test_kernel_lab.py", "test_labs_browser.py",
              "test_audit_lab.py", "test_js_core.py")

#: Files whose module fixtures are expensive and serve many tests (a fresh virtual environment,
#: trained heads, a browser page of every lab): each runs whole on one worker, so the fixture is
#: built once instead of once per worker. Every other test is handed out on its own.
ONE_WORKER_FILES = ("test_core_install.py", "test_behaviour.py", "test_behaviour_limits.py",
                    "test_chapter06_mechanisms.py", "test_budget_curves.py", "test_labs_browser.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``, by file for ONE_WORKER_FILES. (pytest-xdist's own loadgroup reads
    xdist_group marks from a node id suffix that pytest 9 no longer keeps: it groups nothing.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerFiles(LoadScopeScheduling):
        # one work unit per listed file, one per test elsewhere; the largest units go out first
        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return path if PurePosixPath(path).name in ONE_WORKER_FILES else nodeid

    return OneWorkerFiles(config, log)
