"""harness.compare on hand-built arrays: tolerance verdicts, dtype and shape
checks, NaN/inf handling, margins and near-ties, model-order first divergence,
upstream mapping and error-budget regressions. Every expected value here is
worked out by hand from the inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.compare import (
    Tolerance,
    compare_tensor,
    compare_tokens,
    find_regressions,
    first_divergence,
    flip_bound,
    is_near_tie,
    max_error,
    model_order_key,
    top_margin,
    upstream_tensor_name,
)

TOL = Tolerance(rtol=3e-4, atol=3e-4)


def test_identical_tensors_pass_with_zero_error():
    a = np.array([[1.5, -2.0], [0.0, 3.25]])
    check = compare_tensor(0, "h.0.output", a, a.copy(), TOL)
    assert check.passed and check.dtype_match and check.shape_match
    assert check.max_abs_error == 0.0 and check.max_rel_error == 0.0
    assert (check.expected_dtype, check.actual_dtype) == ("float64", "float64")


def test_error_just_inside_and_just_outside_the_allclose_bound():
    expected = np.array([1.0, 2.0])
    # bound at 2.0 is atol + rtol*2 = 9e-4
    inside = compare_tensor(0, "logits", expected, np.array([1.0, 2.0 + 8e-4]), TOL)
    assert inside.passed
    assert inside.max_abs_error == pytest.approx(8e-4, rel=1e-9)
    assert inside.max_rel_error == pytest.approx(4e-4, rel=1e-9)
    outside = compare_tensor(0, "logits", expected, np.array([1.0, 2.0 + 1e-3]), TOL)
    assert not outside.passed
    assert outside.max_abs_error == pytest.approx(1e-3, rel=1e-9)
    assert outside.max_rel_error == pytest.approx(5e-4, rel=1e-9)
    assert "1 of 2 values outside" in outside.reason


def test_configurable_tolerance_changes_the_verdict():
    expected, actual = np.array([10.0]), np.array([10.01])
    assert not compare_tensor(0, "logits", expected, actual, TOL).passed
    assert compare_tensor(0, "logits", expected, actual, Tolerance(rtol=1e-3, atol=0.0)).passed


def test_relative_error_ignores_exact_zero_references():
    check = compare_tensor(0, "embedding", np.array([0.0, 4.0]), np.array([1e-4, 4.002]), TOL)
    assert check.max_abs_error == pytest.approx(2e-3, rel=1e-9)
    assert check.max_rel_error == pytest.approx(5e-4, rel=1e-9)


def test_dtype_mismatch_fails_even_when_values_are_equal():
    expected = np.array([0.5, 0.25], dtype=np.float64)
    check = compare_tensor(2, "h.0.attention", expected, expected.astype(np.float32), TOL)
    assert not check.passed and not check.dtype_match
    assert check.max_abs_error == 0.0
    assert check.reason == "dtype float32 != reference float64"


def test_shape_mismatch_fails_with_undefined_errors():
    check = compare_tensor(0, "embedding", np.zeros((4, 8)), np.zeros((5, 8)), TOL)
    assert not check.passed and not check.shape_match
    assert check.max_abs_error is None and check.max_rel_error is None
    assert check.expected_shape == [4, 8] and check.actual_shape == [5, 8]


def test_matching_nan_and_inf_positions_pass():
    expected = np.array([np.nan, np.inf, -np.inf, 1.0])
    check = compare_tensor(0, "logits", expected, expected.copy(), TOL)
    assert check.passed and check.max_abs_error == 0.0


@pytest.mark.parametrize("actual", [
    [1.0, np.inf, -np.inf, 1.0],       # NaN became a number
    [np.nan, np.inf, -np.inf, np.nan],  # a number became NaN
    [np.nan, -np.inf, -np.inf, 1.0],   # sign of an infinity flipped
    [np.inf, np.inf, -np.inf, 1.0],    # NaN became an infinity
    [np.nan, np.nan, -np.inf, 1.0],    # an infinity became NaN
    [np.nan, np.inf, np.nan, 1.0],     # a negative infinity became NaN
])
def test_nonfinite_disagreement_fails_with_undefined_errors(actual):
    expected = np.array([np.nan, np.inf, -np.inf, 1.0])
    check = compare_tensor(0, "logits", expected, np.array(actual), TOL)
    assert not check.passed and check.max_abs_error is None
    assert "non-finite" in check.reason


def test_relative_tolerance_scales_with_the_reference_not_the_compiler():
    """|actual - expected| <= atol + rtol * |expected|: a compiler that inflates a value gets no
    more room for it (numpy.isclose(actual, expected) is the same rule)."""
    tol = Tolerance(rtol=0.5, atol=0.0)
    assert not compare_tensor(0, "logits", np.array([1.0]), np.array([1.9]), tol).passed
    assert compare_tensor(0, "logits", np.array([1.9]), np.array([1.0]), tol).passed
    assert [bool(np.isclose(a, e, rtol=0.5, atol=0.0)) for a, e in ((1.9, 1.0), (1.0, 1.9))] == [False, True]


def test_tolerance_rejects_negative_or_nan():
    with pytest.raises(ValueError, match="rtol"):
        Tolerance(rtol=-1.0)
    with pytest.raises(ValueError, match="atol"):
        Tolerance(atol=math.nan)


def test_top_margin_is_top1_minus_top2():
    assert top_margin(np.array([1.0, 3.0, 2.5, -7.0])) == pytest.approx(0.5)
    assert top_margin(np.array([2.0, 2.0, 1.0])) == 0.0


def test_near_tie_bound_is_what_in_tolerance_errors_on_the_top_two_can_close():
    # each logit may move by atol + rtol*|logit|: 3e-4 + 3e-4*10 and 3e-4 + 3e-4*9.99
    top = (10.0, 9.99)
    assert flip_bound(TOL, top) == pytest.approx(2 * 3e-4 + 3e-4 * 19.99, rel=1e-12)
    assert flip_bound(TOL) == pytest.approx(6e-4, rel=1e-12)  # logits unknown: atol on each side
    # a 5e-4 margin (above atol) is a near-tie: two 3e-4 errors in opposite directions close it
    assert is_near_tie(5e-4, TOL) and not is_near_tie(7e-4, TOL) and not is_near_tie(None, TOL)
    assert is_near_tie(6.5e-3, TOL, top) and not is_near_tie(6.6e-3, TOL, top)
    assert is_near_tie(0.0, Tolerance(0.0, 0.0)) and not is_near_tie(1e-9, Tolerance(0.0, 0.0))


def test_token_near_ties_use_the_reference_logits():
    checks = compare_tokens([1, 2], [1, 3], [1.0, 5e-3], TOL, tops=[(20.0, 19.0), (10.0, 9.995)])
    assert [c.near_tie for c in checks] == [False, True]
    assert checks[1].bound == pytest.approx(6e-4 + 3e-4 * 19.995, rel=1e-12)
    assert not compare_tokens([2], [3], [5e-3], TOL)[0].near_tie  # without logits only 2*atol


def test_tolerance_ratio_is_the_share_of_the_allowance_used():
    check = compare_tensor(0, "logits", np.array([100.0, 0.0]), np.array([100.02, 1e-4]), TOL)
    # allowed: 3e-4 + 3e-4*100 = 0.0303 for the first element, 3e-4 for the second
    assert check.passed and check.tolerance_ratio == pytest.approx(0.02 / 0.0303, rel=1e-9)
    assert compare_tensor(0, "x", np.ones(2), np.ones(2), TOL).tolerance_ratio == 0.0
    zero = Tolerance(0.0, 0.0)
    assert compare_tensor(0, "x", np.ones(2), np.ones(2), zero).tolerance_ratio == 0.0
    assert compare_tensor(0, "x", np.ones(2), np.array([1.0, 1.5]), zero).tolerance_ratio is None
    assert compare_tensor(0, "x", np.ones(2), np.full(2, np.nan), TOL).tolerance_ratio is None


def test_token_mismatch_below_margin_is_a_near_tie():
    checks = compare_tokens([5, 6, 7], [5, 9, 8], [1.0, 1e-4, 2.0], TOL)
    assert [c.agree for c in checks] == [True, False, False]
    assert [c.near_tie for c in checks] == [False, True, False]


def test_cascaded_free_running_mismatches_are_not_near_ties():
    # after step 1 the compiler saw a different prefix: the reference's margin at step 2 does not apply
    checks = compare_tokens([1, 2, 3], [1, 9, 9], [1.0, 1.0, 1e-5], TOL, cascade=True)
    assert [c.near_tie for c in checks] == [False, False, False]
    forced = compare_tokens([1, 2, 3], [1, 9, 9], [1.0, 1.0, 1e-5], TOL)
    assert [c.near_tie for c in forced] == [False, False, True]


def test_missing_tokens_are_mismatches():
    checks = compare_tokens([1, 2], [1], [1.0, 1.0], TOL)
    assert checks[1].actual is None and not checks[1].agree


def _check(step, tensor, passed, err=0.0):
    return {"step": step, "tensor": tensor, "dtype_match": True, "max_abs_error": err, "max_rel_error": err,
            "passed": passed}


def test_first_divergence_is_earliest_step_then_model_order():
    checks = [
        _check(1, "logits", False), _check(2, "embedding", False), _check(1, "h.10.attention", False),
        _check(1, "h.2.output", False), _check(0, "h.0.output", True), _check(1, "h.2.attention", True),
    ]
    assert (first_divergence(checks)["step"], first_divergence(checks)["tensor"]) == (1, "h.2.output")
    assert first_divergence([_check(0, "h.3.output", False), _check(0, "h.3.attention", False)])["tensor"] == "h.3.attention"
    assert first_divergence([_check(0, "logits", False), _check(0, "embedding", False)])["tensor"] == "embedding"
    assert first_divergence([_check(0, "logits", True)]) is None


def test_max_error_skips_undefined():
    assert max_error([_check(0, "a", True, 1e-3), _check(0, "b", False, None), _check(1, "a", True, 2e-5)]) == 1e-3
    assert max_error([_check(0, "b", False, None)]) is None


def test_upstream_tensor_names_follow_the_model():
    assert upstream_tensor_name("embedding", 12) is None
    assert upstream_tensor_name("h.0.attention", 12) == "embedding"
    assert upstream_tensor_name("h.0.output", 12) == "h.0.attention"
    assert upstream_tensor_name("h.5.attention", 12) == "h.4.output"
    assert upstream_tensor_name("logits", 12) == "h.11.output"
    with pytest.raises(ValueError):
        upstream_tensor_name("h.x.mlp", 12)


def _report(errors):
    return {"modes": {"subgraph": {"checks": [_check(s, t, True, e) for (s, t), e in errors.items()]}}}


def test_regression_is_more_than_tenfold_growth():
    base = _report({(0, "embedding"): 1e-6, (0, "logits"): 1e-6, (1, "logits"): 0.0, (2, "logits"): 0.0,
                    (3, "logits"): 1e-6})
    new = _report({(0, "embedding"): 2e-5, (0, "logits"): 9.9e-6, (1, "logits"): 1e-12, (2, "logits"): 1e-10,
                   (3, "logits"): None})
    found = find_regressions(base, new)
    assert [(r["step"], r["tensor"]) for r in found] == [(0, "embedding"), (2, "logits"), (3, "logits")]
    assert found[0]["ratio"] == pytest.approx(20.0)
    assert found[1]["ratio"] == pytest.approx(100.0)  # 1e-10 over the 1e-12 floor
    assert found[2]["ratio"] is None


def test_growth_from_an_exact_zero_is_measured_against_the_floor():
    """An exact baseline regresses only past 10x the 1e-12 floor: 5e-12 is within it."""
    assert find_regressions(_report({(0, "logits"): 0.0}), _report({(0, "logits"): 5e-12})) == []
    assert len(find_regressions(_report({(0, "logits"): 0.0}), _report({(0, "logits"): 2e-11}))) == 1


def test_regressions_only_compare_matching_modes_and_checks():
    base = {"modes": {"fused": {"checks": [_check(0, "logits", True, 1e-9)]}}}
    new = {"modes": {"subgraph": {"checks": [_check(0, "logits", True, 1.0)]},
                     "fused": {"checks": [_check(1, "logits", True, 1.0)]}}}
    assert find_regressions(base, new) == []


def test_worst_index_is_the_element_furthest_outside_its_allowance_in_the_tensors_own_indexing():
    expected = np.zeros((3, 4))
    expected[0, 0] = np.nan  # a matching NaN before it: the finite-only errors must map back
    actual = expected.copy()
    actual[1, 2] += 1e-3  # outside atol, but less so than
    actual[2, 3] += 5e-3  # this one
    check = compare_tensor(0, "h.0.output", expected, actual, Tolerance(rtol=0, atol=3e-4))
    assert not check.passed and check.worst_index == [2, 3]
    assert "worst_index" not in check.to_json()  # only the first divergence carries it
    passing = compare_tensor(0, "h.0.output", expected, expected.copy(), Tolerance())
    assert passing.worst_index is None
    logits = compare_tensor(0, "logits", np.arange(5.0), np.arange(5.0) + np.eye(5)[3], Tolerance())
    assert logits.worst_index == [3]  # the token id


def test_an_error_exactly_at_the_allowance_passes_as_numpy_allclose_says():
    """|actual - expected| <= atol + rtol*|expected| is inclusive; the values here are exact in binary."""
    assert compare_tensor(0, "logits", np.array([1.0]), np.array([1.5]), Tolerance(rtol=0.0, atol=0.5)).passed
    assert compare_tensor(0, "logits", np.array([2.0]), np.array([3.0]), Tolerance(rtol=0.5, atol=0.0)).passed
    assert compare_tensor(0, "logits", np.array([-2.0]), np.array([-3.0]), Tolerance(rtol=0.25, atol=0.5)).passed
    assert bool(np.allclose([1.5, 3.0, -3.0], [1.0, 2.0, -2.0], rtol=0.0, atol=1.0))  # the same rule, all inclusive
    assert not compare_tensor(0, "logits", np.array([2.0]), np.array([3.25]), Tolerance(rtol=0.5, atol=0.0)).passed


def test_an_error_below_the_reference_counts_as_much_as_one_above():
    """The compiler undershooting is as wrong as overshooting: the error is |actual - expected|."""
    expected = np.array([1.0, 4.0])
    low = compare_tensor(0, "h.0.output", expected, np.array([1.0, 3.0]), TOL)
    assert not low.passed
    assert low.max_abs_error == 1.0 and low.max_rel_error == 0.25  # |3 - 4| and |3 - 4| / 4
    mixed = compare_tensor(0, "h.0.output", expected, np.array([0.5, 4.25]), TOL)
    assert mixed.max_abs_error == 0.5 and mixed.max_rel_error == 0.5  # the undershoot is the larger error


def test_near_tie_bound_uses_the_magnitude_of_negative_logits():
    # each logit may move by 3e-4 + 3e-4*|logit|: 3e-4 + 3e-3 and 3e-4 + 3.0015e-3 -> 6.6015e-3 in all
    top = (-10.0, -10.005)
    assert flip_bound(TOL, top) == pytest.approx(6e-4 + 3e-4 * 20.005, rel=1e-12)
    assert is_near_tie(5e-3, TOL, top) and not is_near_tie(7e-3, TOL, top)


def test_a_free_running_decode_that_agrees_again_after_diverging_is_still_cascaded():
    """Once the free-running decode has diverged every later step saw another prefix, even a step whose
    token happens to agree: a later mismatch is not a near-tie, whatever the reference's margin there."""
    checks = compare_tokens([1, 2, 3, 4], [1, 9, 3, 9], [1.0, 1.0, 1.0, 1e-5], TOL, cascade=True)
    assert [c.agree for c in checks] == [True, False, True, False]
    assert [c.near_tie for c in checks] == [False, False, False, False]


def test_model_order_holds_past_ten_layers():
    names = ["embedding"] + [f"h.{i}.{part}" for i in range(12) for part in ("attention", "output")] + ["logits"]
    assert sorted(reversed(names), key=model_order_key) == names
    assert first_divergence([_check(0, "h.10.attention", False), _check(0, "h.9.output", False)])["tensor"] == "h.9.output"


def test_logits_sort_before_unknown_tensor_names():
    """Unknown names sort after the blocks, but logits, the model's last named tensor, comes before them."""
    assert sorted(["zz", "lm_head", "logits", "h.0.output"], key=model_order_key) == ["h.0.output", "logits", "lm_head", "zz"]


def test_growth_of_exactly_the_factor_is_not_a_regression():
    """Only growth of *more* than ten times regresses: 0.25 -> 2.5 is exactly 10x (exact in binary)."""
    assert find_regressions(_report({(0, "logits"): 0.25}), _report({(0, "logits"): 2.5})) == []
    found = find_regressions(_report({(0, "logits"): 0.25}), _report({(0, "logits"): 2.5 + 2 ** -40}))
    assert [(r["step"], r["tensor"]) for r in found] == [(0, "logits")]
