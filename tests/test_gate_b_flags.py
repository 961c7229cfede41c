"""The fast-band flag's confusion counts, with labelled controls.

``census_counts`` reports sensitivity, specificity and the margin's rank separation (AUC). A flag
that fires on losers only must score 1/1/1; a flag that fires on every seed (the fast-band flag on the
stored 60-seed census) must score specificity 0; a flag that fires on survivors only must score 0/0.
"""

import math

import pytest

from ropegeo.gates.b.rival_census import census_counts


def row(loses, flagged, margin):
    return dict(raw_loses=loses, flagged=flagged, fast_margin=margin, ntk_loses=False, ntk_near=None)


def test_discriminating_flag_positive_control():
    rows = [row(True, True, 0.05), row(True, True, 0.06), row(False, False, 0.3), row(False, False, 0.4)]
    c = census_counts({"seeds": rows})
    assert (c["sensitivity"], c["specificity"], c["margin_auc"]) == (1.0, 1.0, 1.0)
    assert (c["flagged_losers"], c["missed_losers"], c["flagged_survivors"], c["clear_survivors"]) == (2, 0, 0, 2)


def test_flag_on_everything_negative_control():
    rows = [row(True, True, 0.07), row(False, True, 0.06), row(False, True, 0.08)]
    c = census_counts({"seeds": rows})
    assert (c["sensitivity"], c["specificity"]) == (1.0, 0.0)
    assert c["margin_auc"] == pytest.approx(0.5)


def test_inverted_flag_negative_control():
    rows = [row(True, False, 0.5), row(False, True, 0.1)]
    c = census_counts({"seeds": rows})
    assert (c["sensitivity"], c["specificity"], c["margin_auc"]) == (0.0, 0.0, 0.0)


def test_no_losers_gives_nan_not_a_pass():
    c = census_counts({"seeds": [row(False, False, 0.2)]})
    assert math.isnan(c["sensitivity"]) and math.isnan(c["margin_auc"]) and c["specificity"] == 1.0
