"""Float floor_divide where (a - fmod(a, b)) / b rounds to a half-integer: NumPy's npy_divmod snaps
to the floor (``div - floor > 0.5`` rounds up, a tie does not). Reachable only where the spacing of
the quotient is 0.5 (2**22..2**23 for float32, 2**51..2**52 for float64)."""
import numpy as np
import pytest

from compiler import jit

CASES = {
    np.float32: ([3.411711e+07, 4.4290916e+07, -3.411711e+07], [6.4059205, 6.1056943, 6.4059205]),
    np.float64: ([624574751028794.1, 4665545787716364.0], [0.16115060496435385, 1.241261635477293]),
}


@pytest.mark.parametrize("dtype", list(CASES), ids=lambda d: np.dtype(d).name)
def test_float_floor_divide_snaps_a_half_integer_quotient_down(dtype):
    a, b = (np.array(v, dtype) for v in CASES[dtype])
    expected = np.floor_divide(a, b)
    np.testing.assert_array_equal(jit(lambda x, y: x // y)(a, b), expected)
    q, r = jit(lambda x, y: divmod(x, y))(a, b)
    np.testing.assert_array_equal(q, expected)
    np.testing.assert_array_equal(r, np.remainder(a, b))
