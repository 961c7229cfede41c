"""Interactive labs, one submodule per lab, each an anywidget whose JavaScript computes and draws.

Every lab's front end is built on one geometry core (``ropegeo/book/static/ropegeo_core.js``) and one
shared interface (``labs_ui.js``), so it answers its controls the same way in Jupyter and on the
static book, where no kernel runs. Python validates and bounds the state (no control can ask for
unbounded work) and gives ropegeo's numbers for it, which the tests compare with the page's
(``tests/test_js_core.py``, ``tests/test_labs_browser.py``); ``bench/labs.py`` times the updates.

Labs: :mod:`.clock_lab` (chapter 2), :mod:`.frequency_lab` and :mod:`.kernel_lab` (chapter 3),
:mod:`.scaling_lab` (chapter 4), :mod:`.wiring_lab` (chapter 5), :mod:`.audit_lab` (chapter 6).
"""
