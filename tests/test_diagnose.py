"""compiler.diagnose.localize on small functions against NumPy: each op held to its own
rounding allowance, so a fault of a hundred ulps in one op is named with its source line, and
values NumPy also gives (NaN where it gives NaN, infinities) are not divergences."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.diagnose import localize
from compiler.testing import inject_fault


def scaled_sum(x, y):
    z = x * y
    return z + 1.0


def test_a_fault_of_a_hundred_ulps_is_named_with_its_line():
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    assert localize(scaled_sum, (x, y)) is None
    with inject_fault("multiply", 1 + 1e-5):  # about 100 ulps of float32, far below any tensor tolerance
        found = localize(scaled_sum, (x, y))
    assert found is not None and found.op == "multiply"
    assert found.source.endswith(f"tests/test_diagnose.py:{scaled_sum.__code__.co_firstlineno + 1}")


def test_nan_and_infinities_numpy_also_gives_are_not_divergences():
    x = np.array([-1.0, 0.0, 1.0, np.inf], np.float32)
    with np.errstate(all="ignore"):
        expected = np.log(x) * 2
    assert np.isnan(expected[0]) and np.isinf(expected[1])
    assert localize(lambda v: np.log(v) * 2, (x,)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_and_matmuls_get_a_length_scaled_allowance(dtype):
    """Order-dependent rounding of a long reduction is not a fault (no false localization)."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((16, 768)) * 100).astype(dtype)
    b = rng.standard_normal((768, 32)).astype(dtype)
    assert localize(lambda p, q: (p @ q).sum(axis=0) + p.sum(), (a, b)) is None


def test_a_fault_that_would_change_nothing_is_refused():
    from compiler.testing import NEVER_FLOAT, check_fault

    for op in ("tanhh", "greater", "argmax", "reduce_any", "isnan"):
        with pytest.raises(ValueError, match=f"cannot inject a fault into {op!r}"):
            check_fault(op)
    check_fault("exp")
    # NumPy's own loops say these ufuncs never return floating point
    for name in NEVER_FLOAT & {n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)}:
        outputs = [t.split("->")[1] for t in getattr(np, name).types]
        assert not any(c in "efdgFDG" for out in outputs for c in out), name
