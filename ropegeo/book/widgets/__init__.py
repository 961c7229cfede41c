"""Interactive labs, one submodule per lab, each an anywidget whose JavaScript computes and draws
(``_lab``); ``bench/labs.py`` times the updates.

Labs: :mod:`.clock_lab` (chapter 2), :mod:`.frequency_lab`, :mod:`.kernel_lab` and :mod:`.attention_lab` (chapter 3),
:mod:`.scaling_lab` and :mod:`.angle_lab` (chapter 4), :mod:`.wiring_lab` and :mod:`.pipeline_lab` (chapter 5),
:mod:`.audit_lab` (chapter 6), :mod:`.axes_lab` (chapter 8).
"""
