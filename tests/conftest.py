from hypothesis import HealthCheck, settings

# Deterministic property tests: the same examples on every run and every machine.
settings.register_profile(
    "ropegeo", derandomize=True, deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ropegeo")


# ---- pytest-xdist: what runs where (`make test` runs with `-n auto --dist loadgroup`) --------------

import pytest  # noqa: E402

#: Test files with the longest single tests (a training, a fresh virtual environment, a book
#: build): they are handed out first, so that no worker starts one of them while the other has
#: nothing left to do. Only the order changes; a name that matches nothing is ignored.
SLOW_FIRST = ("test_chapter07.py", "test_core_install.py", "test_chapter06_mechanisms.py",
              "test_chapter06_budgets.py", "test_chapter06.py", "test_kernel_lab.py", "test_labs_browser.py",
              "test_audit_lab.py", "test_js_core.py")


#: Module fixtures that are cheap beside the tests that share them: those tests stay spread over
#: the workers, each worker building its own copy (test_site.py's browser on the served site: a few
#: seconds, against minutes of page checks).
SPREAD_FIXTURES = ("served_site",)


def _shared_module_fixture_users(items):
    """The tests that use a module-scoped (or class- or package-scoped) fixture serving more than
    one test: under xdist each worker that ran one of them would build the fixture again."""
    users = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        for name, defs in (info.name2fixturedefs.items() if info else ()):
            if defs and defs[-1].scope in ("module", "class", "package") and name not in SPREAD_FIXTURES:
                users.setdefault((item.path, name), []).append(item)
    return {id(item) for used in users.values() if len(used) > 1 for item in used}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Those tests get one xdist group per file (--dist loadgroup keeps a group on one worker and
    # hands out the largest groups first), so each such fixture is built once; the file's other
    # tests are handed out one by one.
    shared = _shared_module_fixture_users(items)
    for item in items:
        if id(item) in shared:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
