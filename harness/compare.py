"""Numerical comparison of one compiler run against the reference capture: per
tensor per step dtype, shape, max absolute and relative error, the share of
the allowed error used, where the worst element is, and an ``allclose``-style verdict (NaN-aware); exact
token agreement with near-tie labelling (the reference's top-1/top-2 margin
within what in-tolerance errors on those two logits can close); the model-order first
divergence; and error-budget regressions against a baseline report. Pure
functions on arrays and dicts — nothing here runs a model."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

import numpy as np

DEFAULT_RTOL = 3e-4
DEFAULT_ATOL = 3e-4
# A tensor's error "grew" when it exceeds this factor times its baseline error.
REGRESSION_FACTOR = 10.0
# Baseline errors below this are treated as this, so 0 -> 1e-15 is not a regression.
REGRESSION_FLOOR = 1e-12

_BLOCK_TENSOR = re.compile(r"^h\.(\d+)\.(attention|output)$")


@dataclass(frozen=True)
class Tolerance:
    """Elementwise |actual - expected| <= atol + rtol * |expected| (numpy.allclose)."""

    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL

    def __post_init__(self):
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"tolerance {name} must be a finite number >= 0, got {value!r}")


@dataclass
class TensorCheck:
    """The verdict for one tensor at one decoding step. Errors are None when
    they are not defined: shapes differ, or non-finite values disagree."""

    step: int
    tensor: str
    dtype_match: bool
    max_abs_error: float | None
    max_rel_error: float | None
    passed: bool
    expected_dtype: str = ""
    actual_dtype: str = ""
    shape_match: bool = True
    expected_shape: list[int] = field(default_factory=list)
    actual_shape: list[int] = field(default_factory=list)
    reason: str | None = None
    # The largest |actual - expected| / (atol + rtol*|expected|): the share of its allowance the
    # worst element uses (<= 1 passes the values). None when undefined, or infinite because
    # the tolerance is zero.
    tolerance_ratio: float | None = None
    # Where the element furthest outside its allowance is (an index into the tensor), when the
    # values fail. Only the first divergence reports it: every check carrying it would grow each
    # report by a list per step and tensor for no reader.
    worst_index: list[int] | None = None

    def to_json(self) -> dict:
        record = asdict(self)
        del record["worst_index"]
        return record


@dataclass
class TokenCheck:
    """One decoding step's token: reference vs compiler, with the reference's
    top-1/top-2 logit margin at that step."""

    step: int
    expected: int
    actual: int | None
    margin: float | None
    near_tie: bool
    bound: float | None = None  # the margin in-tolerance logit errors can close (flip_bound)

    @property
    def agree(self) -> bool:
        return self.expected == self.actual


def tensor_rank(name: str) -> float:
    """Position of a tensor in model order: embedding, h.0.attention,
    h.0.output, h.1.attention, ..., logits. Unknown names sort last."""
    if name == "embedding":
        return -1
    match = _BLOCK_TENSOR.match(name)
    if match:
        return 2 * int(match.group(1)) + (0 if match.group(2) == "attention" else 1)
    return math.inf  # logits and unknown names; model_order_key puts logits first


def model_order_key(name: str) -> tuple:
    return (tensor_rank(name), name != "logits", name)


def tensor_layer(name: str) -> str:
    """The layer a tensor belongs to: "embedding", "h.3", "logits"."""
    match = _BLOCK_TENSOR.match(name)
    return f"h.{match.group(1)}" if match else name


def upstream_tensor_name(name: str, n_layer: int) -> str | None:
    """The reference tensor that is the input of the sublayer producing `name`
    (what ``runner.localize`` re-runs that sublayer on)."""
    if name == "embedding":
        return None
    if name == "logits":
        return f"h.{n_layer - 1}.output" if n_layer > 0 else "embedding"
    match = _BLOCK_TENSOR.match(name)
    if not match:
        raise ValueError(f"unknown tensor name {name!r}")
    layer, part = int(match.group(1)), match.group(2)
    if part == "output":
        return f"h.{layer}.attention"
    return "embedding" if layer == 0 else f"h.{layer - 1}.output"


def _finite_max(values: np.ndarray) -> float:
    return float(values.max()) if values.size else 0.0


def _tolerance_ratio(abs_err: np.ndarray, allowed: np.ndarray) -> float | None:
    """max(abs_err / allowed), 0/0 counting as 0; None when infinite (zero tolerance)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(abs_err == 0, 0.0, abs_err / allowed)
    worst = _finite_max(ratios) if ratios.size else 0.0
    return worst if math.isfinite(worst) else None


def compare_tensor(step: int, name: str, expected, actual, tol: Tolerance = Tolerance()) -> TensorCheck:
    """Compare the compiler's `actual` against the reference's `expected`.

    NaN matches NaN and an infinity matches the same infinity (the positions
    must agree); any other non-finite disagreement fails with undefined
    (None) errors. The relative error is taken over elements whose expected
    value is non-zero; elements where the reference is exactly 0 are covered
    by the absolute error and atol."""
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    check = TensorCheck(
        step=step, tensor=name,
        dtype_match=expected.dtype == actual.dtype,
        max_abs_error=None, max_rel_error=None, passed=False,
        expected_dtype=str(expected.dtype), actual_dtype=str(actual.dtype),
        shape_match=expected.shape == actual.shape,
        expected_shape=list(expected.shape), actual_shape=list(actual.shape),
    )
    if not check.shape_match:
        check.reason = f"shape {tuple(actual.shape)} != reference {tuple(expected.shape)}"
        return check
    if not (np.issubdtype(expected.dtype, np.number) and np.issubdtype(actual.dtype, np.number)):
        check.reason = f"non-numeric dtype (reference {expected.dtype}, compiler {actual.dtype})"
        return check

    exp = expected.astype(np.float64)
    act = actual.astype(np.float64)
    exp_finite, act_finite = np.isfinite(exp), np.isfinite(act)
    both_finite = exp_finite & act_finite
    # Non-finite positions must agree exactly: NaN with NaN, +inf with +inf.
    same_nonfinite = (~exp_finite & ~act_finite) & (
        (np.isnan(exp) & np.isnan(act)) | (exp == act)
    )
    nonfinite_mismatch = ~both_finite & ~same_nonfinite

    abs_err = np.abs(act[both_finite] - exp[both_finite])
    ref_mag = np.abs(exp[both_finite])
    nonzero = ref_mag > 0
    within = abs_err <= tol.atol + tol.rtol * ref_mag

    if nonfinite_mismatch.any():
        count = int(nonfinite_mismatch.sum())
        check.reason = f"{count} non-finite value(s) disagree (NaN/inf where the other side has a different value)"
    else:
        check.max_abs_error = _finite_max(abs_err)
        check.max_rel_error = _finite_max(abs_err[nonzero] / ref_mag[nonzero])
        check.tolerance_ratio = _tolerance_ratio(abs_err, tol.atol + tol.rtol * ref_mag)
        values_ok = bool(within.all())
        if not values_ok:
            worst = int(np.argmax(abs_err - (tol.atol + tol.rtol * ref_mag)))
            # abs_err holds the finite elements only: map back to the tensor's own index
            position = int(np.flatnonzero(both_finite.ravel())[worst])
            check.worst_index = [int(i) for i in np.unravel_index(position, exp.shape)]
            check.reason = (
                f"{int((~within).sum())} of {abs_err.size} values outside rtol={tol.rtol:g} atol={tol.atol:g}; "
                f"worst {float(act[both_finite][worst]):.9g} vs reference {float(exp[both_finite][worst]):.9g}"
            )
        check.passed = values_ok and check.dtype_match
    if not check.dtype_match:
        dtype_reason = f"dtype {actual.dtype} != reference {expected.dtype}"
        check.reason = dtype_reason if check.reason is None else f"{dtype_reason}; {check.reason}"
    return check


def top_two(logits) -> tuple[float, float] | None:
    """The reference's two largest logits (top-1, top-2); None with fewer than two."""
    row = np.asarray(logits, dtype=np.float64).ravel()
    if row.size < 2:
        return None
    second, first = np.partition(row, -2)[-2:]
    return float(first), float(second)


def top_margin(logits) -> float:
    """The reference's top-1 minus top-2 logit: how decisively it picked its token."""
    pair = top_two(logits)
    return math.inf if pair is None else pair[0] - pair[1]


def flip_bound(tol: Tolerance, top: tuple[float, float] | None = None) -> float:
    """The largest top-1/top-2 margin errors within tolerance can close: each of the two logits
    may move by atol + rtol*|logit|, in opposite directions. Without the logits, 2*atol."""
    if top is None:
        return 2 * tol.atol
    return 2 * tol.atol + tol.rtol * (abs(top[0]) + abs(top[1]))


def is_near_tie(margin: float | None, tol: Tolerance, top: tuple[float, float] | None = None) -> bool:
    """A margin within the flip bound means in-tolerance logit errors could flip the pick."""
    return margin is not None and margin <= flip_bound(tol, top)


def compare_tokens(expected, actual, margins, tol: Tolerance = Tolerance(), cascade: bool = False,
                   tops=None) -> list[TokenCheck]:
    """Exact token comparison per step. `margins[s]` is the reference's margin at
    step s and `tops[s]` its (top-1, top-2) logits, which set the near-tie bound
    (flip_bound). With `cascade` (free-running decoding) only the first mismatch
    can be a near-tie: later steps saw a different prefix than the reference, so
    its margins no longer describe them."""
    checks = []
    diverged = False
    for step, want in enumerate(expected):
        got = actual[step] if step < len(actual) else None
        margin = margins[step] if margins is not None and step < len(margins) else None
        margin = None if margin is None else float(margin)
        top = tops[step] if tops is not None and step < len(tops) else None
        mismatch = got != want
        near = mismatch and not (cascade and diverged) and is_near_tie(margin, tol, top)
        checks.append(TokenCheck(step=step, expected=int(want), actual=None if got is None else int(got),
                                 margin=margin, near_tie=near, bound=flip_bound(tol, top)))
        diverged = diverged or mismatch
    return checks


def first_divergence(checks) -> TensorCheck | dict | None:
    """The earliest failing check: lowest step, then model order of the tensor.
    Accepts TensorCheck objects or their JSON dicts."""
    def field_of(check, key):
        return check[key] if isinstance(check, dict) else getattr(check, key)

    failing = [c for c in checks if not field_of(c, "passed")]
    if not failing:
        return None
    return min(failing, key=lambda c: (field_of(c, "step"), model_order_key(field_of(c, "tensor"))))


def max_error(checks) -> float | None:
    """Largest defined max_abs_error over checks (None when none is defined)."""
    values = [c["max_abs_error"] if isinstance(c, dict) else c.max_abs_error for c in checks]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def find_regressions(baseline: dict, report: dict, factor: float = REGRESSION_FACTOR,
                     floor: float = REGRESSION_FLOOR) -> list[dict]:
    """Tensors whose max_abs_error grew more than `factor` times since `baseline`
    (both are report dicts), matched by (mode, step, tensor). Inside tolerance
    or not: this guards the error budget. A check whose error became undefined
    (non-finite disagreement) counts as a regression too."""
    regressions = []
    base_modes = baseline.get("modes", {})
    for mode, entry in report.get("modes", {}).items():
        base_entry = base_modes.get(mode)
        if not base_entry:
            continue
        old_errors = {(c["step"], c["tensor"]): c.get("max_abs_error") for c in base_entry.get("checks", [])}
        for check in entry.get("checks", []):
            key = (check["step"], check["tensor"])
            if key not in old_errors or old_errors[key] is None:
                continue
            old, new = old_errors[key], check.get("max_abs_error")
            limit = factor * max(old, floor)
            if new is None or new > limit:
                regressions.append({
                    "mode": mode, "step": check["step"], "tensor": check["tensor"],
                    "baseline_max_abs_error": old, "max_abs_error": new,
                    "ratio": None if new is None else new / max(old, floor),
                })
    regressions.sort(key=lambda r: (r["mode"], r["step"], model_order_key(r["tensor"])))
    return regressions
