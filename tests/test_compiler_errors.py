"""Bad input at the compiled boundary and at trace time: a clear error naming the
problem, or a correct result where NumPy semantics allow one — never a crash."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from compiler import jit, ops

X = np.arange(12, dtype=np.float32).reshape(3, 4) / 4 - 1


def add(a, b):
    return a + b


# --------------------------------------------------------------------------- arity, dtype, shape


def test_too_few_arguments_names_the_missing_one():
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'b'"):
        jit(add)(X)


def test_too_many_arguments():
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
        jit(add)(X, X, X)


def test_arity_errors_do_not_poison_the_cache():
    f = jit(add)
    with pytest.raises(TypeError):
        f(X)
    np.testing.assert_array_equal(f(X, X), X + X)
    assert f.compile_count == 1


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.longdouble, object, "U3", "datetime64[s]"])
def test_unsupported_input_dtype_names_the_argument(dtype):
    bad = np.zeros(4, dtype=dtype)
    with pytest.raises(TypeError, match=re.escape(f"argument b: dtype {np.dtype(dtype)} is not supported")):
        jit(add)(X[0], bad)


def test_unsupported_dtype_in_a_nested_argument_names_its_path():
    with pytest.raises(TypeError, match=r"argument params\['g'\]: dtype complex64 is not supported"):
        jit(lambda x, params: x * params["g"])(X, {"g": np.ones(4, np.complex64)})


@pytest.mark.parametrize("make", [
    lambda x: x.astype(np.longdouble),
    lambda x: x + 1j,
    lambda x: x * np.complex64(2),
    lambda x: x + np.ones(4, np.longdouble),
], ids=["astype-longdouble", "python-complex", "numpy-complex", "longdouble-constant"])
def test_unsupported_dtype_inside_the_function(make):
    with pytest.raises(TypeError, match="is not supported"):
        jit(make)(X)


def test_incompatible_shapes_name_both():
    with pytest.raises(ValueError, match=r"shapes \(3, 4\) and \(5,\) cannot be broadcast together"):
        jit(add)(X, np.ones(5, np.float32))


def test_shape_errors_at_trace_time():
    with pytest.raises(ValueError, match=r"cannot reshape array of size 12 into shape \(5, 3\)"):
        jit(lambda x: x.reshape(5, 3))(X)
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds"):
        jit(lambda x: np.sum(x, axis=2))(X)
    with pytest.raises(ValueError, match="matmul: mismatch in core dimension"):
        jit(lambda x: x @ x)(X)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        jit(lambda x: x[5])(X)


def test_array_keyword_arguments_are_rejected_clearly():
    with pytest.raises(TypeError, match="keyword argument 'b' is static and must be hashable"):
        jit(add)(X, b=X)


# --------------------------------------------------------------------------- non-contiguous and aliasing inputs


@pytest.mark.parametrize("view", [
    lambda a: a.T,
    lambda a: a[:, ::2],
    lambda a: a[::-1],
    lambda a: a[::2, ::-3],
    lambda a: np.asfortranarray(a),
    lambda a: np.broadcast_to(a[:1], a.shape),   # zero stride
], ids=["transposed", "strided", "reversed", "strided-reversed", "fortran", "zero-stride"])
def test_non_contiguous_inputs_are_copied_at_the_boundary(view):
    base = np.random.default_rng(0).standard_normal((6, 9)).astype(np.float32)
    v = view(base)
    assert not v.flags.c_contiguous or v.strides[0] == 0
    got = jit(ops.softmax)(v)
    np.testing.assert_allclose(got, ops.softmax(v), rtol=1e-6, atol=1e-7)
    assert got.dtype == np.float32


def test_non_contiguous_matmul_operands():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 5))
    b = rng.standard_normal((6, 8))
    got = jit(lambda a, b: a @ b)(a[::2].T, b[::-1, :4].T)
    np.testing.assert_allclose(got, a[::2].T @ b[::-1, :4].T, rtol=1e-12, atol=1e-12)


def test_same_array_passed_twice():
    got = jit(lambda a, b: a * b - a)(X, X)
    np.testing.assert_array_equal(got, X * X - X)


def test_overlapping_views():
    a = np.arange(10, dtype=np.float64)
    got = jit(lambda p, q: p - q)(a[1:], a[:-1])
    np.testing.assert_array_equal(got, np.ones(9))
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    got = jit(lambda p, q: p @ q)(m, m.T)
    np.testing.assert_allclose(got, m @ m.T, rtol=1e-6)


def test_inputs_are_not_modified_and_outputs_are_fresh():
    x = X.copy()
    out = jit(lambda x: x)(x)
    np.testing.assert_array_equal(out, X)
    assert not np.shares_memory(out, x)
    out[:] = 0
    np.testing.assert_array_equal(x, X)


# --------------------------------------------------------------------------- gather bounds


@pytest.mark.parametrize("bad", [3, 100, -4, -1000, np.iinfo(np.int64).max, np.iinfo(np.int64).min])
def test_runtime_gather_index_out_of_range(bad):
    f = jit(lambda w, ids: w[ids])
    np.testing.assert_array_equal(f(X, np.array([0, 2, -3])), X[[0, 2, -3]])
    with pytest.raises(ValueError, match=rf"argument ids: index {bad} is out of range for an axis of size 3"):
        f(X, np.array([0, bad, 1]))


def test_runtime_gather_index_out_of_range_int32_and_take():
    with pytest.raises(ValueError, match="argument ids: index 4 is out of range for an axis of size 4"):
        jit(lambda w, ids: np.take(w, ids, axis=1))(X, np.array([[0], [4]], np.int32))
    with pytest.raises(ValueError, match=r"argument p\['ids'\]: index -9 is out of range"):
        jit(lambda p: p["w"][p["ids"]])({"w": X, "ids": np.array([-9])})


@pytest.mark.parametrize("bad", [3, -4])
def test_constant_gather_index_out_of_range(bad):
    with pytest.raises(ValueError, match=f"gather index {bad} is out of range for axis 0 with size 3"):
        jit(lambda w: w[np.array([0, bad])])(X)
    with pytest.raises(ValueError, match=f"gather index {bad} is out of range"):
        jit(lambda w: w[[bad]])(X)


def test_negative_integer_exponents_are_refused_like_numpy():
    # NumPy refuses any negative integer exponent; native ipowi would divide by zero for 0 ** -1
    base = np.array([0, 2, -3], np.int64)
    f = jit(lambda x, y: x ** y)
    np.testing.assert_array_equal(f(base, np.array([0, 3, 2])), base ** np.array([0, 3, 2]))
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        base ** np.array([1, -1, 2])  # the independent source of the behaviour
    with pytest.raises(ValueError, match=r"argument y: integers to negative integer powers are not allowed \(np.power\); it holds -2"):
        f(base, np.array([1, -2, 2]))
    with pytest.raises(ValueError, match=r"argument p\['e'\]: integers to negative"):
        jit(lambda p: np.power(p["b"], p["e"].T))({"b": base, "e": np.array([[-1], [1], [1]], np.int8)})
    with pytest.raises(ValueError, match="the exponent holds -1"):
        jit(lambda x: x ** -1)(base)
    # a computed exponent: the kernel checks it and the call raises once it returned
    computed = jit(lambda x, y: x ** (y - 1))
    np.testing.assert_array_equal(computed(base, np.array([1, 4, 3])), base ** np.array([0, 3, 2]))
    with pytest.raises(ValueError, match=r"integers to negative integer powers are not allowed \(np.power\); the "
                       r"exponent for np.power at .*test_compiler_errors.py:\d+ \(an exponent computed in the kernel\) held -1 "
                       r"\(checked as the kernel ran\)"):
        computed(base, np.array([1, 0, 3]))


def test_an_exponent_cast_from_an_unsigned_type_of_the_same_width_is_not_assumed_non_negative():
    """uint32 -> int32 turns values from 2**31 up negative, which NumPy refuses to raise integers to; the
    compiler must not treat such an exponent as "never negative" and compute a value."""
    base = np.array([2, 3, 5], np.int32)
    exponent = np.array([1, 2**31 + 1, 2**32 - 1], np.uint32)
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        base ** exponent.astype(np.int32)  # the independent source of the behaviour
    with pytest.raises(ValueError, match="negative integer powers .* held -2147483647"):
        jit(lambda b, e: b ** e.astype(np.int32))(base, exponent)
    small = np.array([1, 2, 3], np.uint32)  # the same cast, values that stay positive
    r = jit(lambda b, e: b ** e.astype(np.int32))(base, small)
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r, base ** small.astype(np.int32))
    narrowed = np.array([1, 200, 255], np.uint16)  # -> int8: 200 and 255 become negative
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        base.astype(np.int8) ** narrowed.astype(np.int8)
    with pytest.raises(ValueError, match="negative integer powers .* held -56"):
        jit(lambda b, e: b ** e.astype(np.int8))(base.astype(np.int8), narrowed)


def test_an_exponent_converted_by_the_loops_dtype_is_checked_as_the_loop_sees_it():
    """np.power(..., dtype=) converts the exponent to the loop's type (same_kind narrows, unsafe anything), and
    NumPy refuses an exponent negative there: int16 32767 is int8 -1, int32 65535 is int16 -1. The compiler
    checked the argument as passed (a fuzz case: np.power(True, int16(32767), dtype=int8) returned 1)."""
    cases = [
        (lambda a, b: np.power(a, b, dtype=np.int8, casting="same_kind"), np.array(True), np.array(32767, np.int16)),
        (lambda a, b: np.power(a, b, dtype=np.int16), np.array([2, 3], np.int32), np.array([2, 65535], np.int32)),
        (lambda a, b: np.power(a, b, dtype=np.int8, casting="unsafe"), np.array([2, 3]), np.array([255, 2])),
        (lambda a, b: np.power(a, b, dtype=np.int8, casting="unsafe"), np.array([2, 3]), np.array([1.0, -1.5])),
    ]
    for fn, base, exponent in cases:
        with pytest.raises(ValueError, match="Integers to negative integer powers"):
            fn(base, exponent)  # the independent source of the behaviour
        with pytest.raises(ValueError, match=r"negative integer powers .* held -1 \(checked as the kernel ran\)"):
            jit(fn)(base, exponent)
    # the same conversions where every exponent stays non-negative: NumPy's values and dtypes
    for fn, base, exponent in [(cases[0][0], np.array(True), np.array(127, np.int16)),
                               (cases[1][0], np.array([2, 3], np.int32), np.array([2, 65537], np.int32)),
                               (cases[3][0], np.array([2, 3]), np.array([1.0, 2.5]))]:
        got, want = jit(fn)(base, exponent), fn(base, exponent)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_integer_exponents_that_need_no_check():
    base = np.array([2, 3], np.int32)
    unsigned = np.array([5, 0], np.uint8)
    np.testing.assert_array_equal(jit(lambda x, y: x ** y.astype(np.int32))(base, unsigned), base ** unsigned.astype(np.int32))
    floats = jit(lambda x, y: x ** y)(base.astype(np.float64), np.array([-1, -2]))
    np.testing.assert_array_equal(floats, base.astype(np.float64) ** np.array([-1, -2]))
    empty = jit(lambda x, y: x ** y)(np.zeros((0,), np.int64), np.array([-1]))  # no element, no error in NumPy either
    assert empty.shape == (0,) and empty.dtype == np.int64


def test_non_integer_indices():
    with pytest.raises(IndexError, match="must be of integer type, got float64"):
        jit(lambda w, i: w[i])(X, np.array([1.0]))


# --------------------------------------------------------------------------- unsupported functions


@pytest.mark.parametrize("fn, name", [
    (lambda x: np.partition(x, 1), "np.partition"),
    (lambda x: np.unique(x), "np.unique"),
    (lambda x: np.pad(x, 1, mode="empty"), "np.pad: mode 'empty'"),
    (lambda x: np.poly(x[:, :3][:3]), "np.poly of a matrix needs its eigenvalues"),
    (lambda x: np.lib.stride_tricks.sliding_window_view(x, 2, axis=0, writeable=True), "writeable=True"),
    (lambda x: np.ix_(x[0] > 0), "np.ix_ of a traced boolean array"),
    (lambda x: x.view(np.float64), r"x.view\(float64\) of float32: another itemsize"),
    (lambda x: np.linalg.cond(x[:, :3]), r"np.linalg.cond: p=None needs singular values"),
    (lambda x: x.astype(np.int8).view(np.bool_), r"x.view\(bool\) of int8"),
    (lambda x: np.nanquantile(x, 0.5, method="inverted_cdf", weights=np.ones_like(x)), r"np.nanquantile: arguments \['weights'\]"),
    (lambda x: np.add.reduceat(x, [np.argmax(x[0]), 0]), "np.add.reduceat at traced positions inside a list"),
    (lambda x: np.logaddexp.reduce(x.reshape(3, 2, 2), axis=(0, 1)), "np.logaddexp.reduce over 2 of 3 axes"),
    (lambda x: np.arctan2.reduce(x, axis=1), "np.arctan2.reduce of float32: NumPy's SIMD loop"),
    (lambda x: np.subtract.reduce(x.astype(np.float16)), "np.subtract.reduce of float16: NumPy's float16 loop"),
    (lambda x: np.ldexp.reduce(x.astype(np.int64), axis=1), "np.ldexp.reduce of int64: NumPy's loop folds int64 elements"),
    (lambda x: np.argpartition(x, 1, axis=-1), "np.argpartition"),
    (lambda x: np.linalg.norm(x, ord=2), r"np.linalg.norm: ord=2 needs singular values"),
    (lambda x: np.linalg.eigh(x[:, :3]), "np.linalg.eigh"),
    (lambda x: np.einsum("ij", x, order="F"), "np.einsum: only the default order"),
    (lambda x: np.copysign.reduce(x, axis=1, where=x > 0, initial=1.0), "np.copysign.reduce with where=: copysign has no"),
    (lambda x: np.sum(x.T, initial=None), "np.sum with initial=None over 2 axes: NumPy starts from the first element"),
    (lambda x: np.arctan2.reduceat(x, [0, 2], axis=1), "np.arctan2.reduceat of float32: NumPy's SIMD loop"),
    (lambda x: np.fmax.reduceat(x, [0, 1, 2], out=x), r"np.fmax.reduceat\(..., out=...\) on the argument x"),
    (lambda x: np.nan_to_num(x, copy=False), "np.nan_to_num with copy=False"),
    (lambda x: np.where(x > 0), "np.where with one argument"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_unsupported_numpy_function_named_at_trace_time(fn, name):
    f = jit(fn)
    with pytest.raises(NotImplementedError, match=name.replace(".", r"\.")):
        f(X)
    assert f.compile_count == 0


def test_ufunc_keyword_arguments_numpy_refuses_or_the_compiler_cannot_follow():
    with pytest.raises(TypeError, match="'subok' must be a boolean"):
        jit(lambda x: np.add(x, x, subok=1))(X)
    with pytest.raises(NotImplementedError, match=r"np.add\(..., out=...\) on the argument x"):
        jit(lambda x: np.add(x, x, out=x))(X)


def test_data_dependent_control_flow_is_a_type_error():
    def relu_branch(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(TypeError, match="truth value of a traced Tensor"):
        jit(relu_branch)(X)
    with pytest.raises(TypeError, match="cannot be converted to float"):
        jit(lambda x: x * float(x[0, 0]))(X)
    with pytest.raises(TypeError, match="cannot be converted to complex"):
        jit(lambda x: x * complex(x[0, 0]).real)(X)


@pytest.mark.parametrize("fn, why", [
    (lambda x: np.unique(x), "the length of its result depends on the values"),
    (lambda x: np.flatnonzero(x), "the length of its result depends on the values"),
    (lambda x: np.bincount(x.astype(np.int64).ravel() + 1), r"largest value plus one.*np\.arange\(n\)"),
    (lambda x: np.linalg.svd(x), "iterative eigenvalue and singular value algorithms"),
    (lambda x: np.linalg.pinv(x), "iterative eigenvalue and singular value algorithms"),
    (lambda x: np.fft.rfft(x), "its result is complex"),
    (lambda x: np.partition(x, 1), "introselect"),
    (lambda x: np.array2string(x), "values are known only as the kernel runs"),
    (lambda x: np.shares_memory(x, x[0]), "not a memory layout"),
    (lambda x: np.emath.sqrt(x), "the values decide its dtype"),
    (lambda x: np.char.center(x, 3), "string arrays"),
], ids=["unique", "flatnonzero", "bincount", "svd", "pinv", "rfft", "partition", "array2string", "shares_memory",
        "emath.sqrt", "char.center"])
def test_refused_numpy_functions_say_why(fn, why):
    with pytest.raises(NotImplementedError, match="is not supported by the compiler: .*" + why):
        jit(fn)(X)


def test_every_numpy_function_a_trace_meets_is_traced_or_refused_with_a_reason():
    """NumPy hands the trace every function of its array-function protocol: each one the NumPy installed
    here has is either traced or on the list of refusals with their reasons (a new NumPy's functions
    show up here)."""
    import numpy.lib.recfunctions as recfunctions
    import numpy.polynomial.polynomial as polynomial

    from compiler.numpy_api import _REFUSED, _REFUSED_MODULES, FUNCTIONS
    modules = (np, np.linalg, np.fft, np.lib.stride_tricks, np.lib.scimath, np.char, np.strings, recfunctions, polynomial,
               np.ma, np.random, np.lib.array_utils)
    functions = [getattr(mod, name) for mod in modules for name in dir(mod)]
    dispatched = [f for f in functions if type(f).__name__ == "_ArrayFunctionDispatcher"]
    assert len(dispatched) > 300
    unexplained = {f"{f.__module__}.{f.__name__}" for f in dispatched
                   if f not in FUNCTIONS and f not in _REFUSED and f.__module__ not in _REFUSED_MODULES}
    assert unexplained == set()


@pytest.mark.parametrize("fn, match", [
    (lambda x: x.nonzero(), r"x\.nonzero of a traced array: the result's shape depends on the data"),
    (lambda x: x.item(), r"x\.item of a traced array: its values are only known as the kernel runs"),
    (lambda x: x.strides, r"x\.strides of a traced array: .*not a memory layout"),
    (lambda x: x.no_such_attribute, r"'Tensor' object has no attribute 'no_such_attribute'"),
])
def test_ndarray_attributes_the_trace_lacks_say_why(fn, match):
    with pytest.raises(AttributeError, match=match):
        jit(fn)(X)


def test_array_metadata_and_array_api_attributes_are_numpys():
    fn = lambda x: (x.mT, x * (x.itemsize + x.nbytes), x.to_device("cpu") * 1)  # noqa: E731
    for got, want in zip(jit(fn)(X), fn(X)):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert jit(lambda x: x if x.device == "cpu" else -x)(X).tolist() == X.tolist()
    with pytest.raises(ValueError, match="matrix transpose with ndim < 2 is undefined"):
        jit(lambda x: x[0].mT)(X)
    with pytest.raises(ValueError, match="Unsupported device: gpu"):
        jit(lambda x: x.to_device("gpu"))(X)


def test_a_numpy_function_converting_a_tensor_is_named_with_the_users_line():
    def doubled(x):
        return np.vectorize(lambda v: 2 * v)(x)  # the line the error names

    line = doubled.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match=rf"vectorize\.__call__ \(in numpy\.[\w.]+\), called at "
                                        rf"test_compiler_errors\.py:{line} tried to: .*call the function on the traced"):
        jit(doubled)(X)

    def converted(x):  # NumPy's C constructors leave no Python frame: the user's line is named instead
        return np.ascontiguousarray(x.T) + np.asarray(x).T

    with pytest.raises(TypeError, match=rf"\(at test_compiler_errors\.py:{converted.__code__.co_firstlineno + 1}: "
                                        r"return np\.ascontiguousarray\(x\.T\) \+ np\.asarray\(x\)\.T\); NumPy's "
                                        r"array constructors .* use it as it is, or np\.copy\(x\)"):
        jit(converted)(X)


def test_np_full_of_a_traced_value_points_to_full_like():
    with pytest.raises(TypeError, match=r"full \(in numpy\._core\.numeric\), called at test_compiler_errors\.py:\d+ tried "
                                        r"to: .*np\.full_like\(x, value, shape=\.\.\., dtype=\.\.\.\)"):
        jit(lambda x: np.full((2, 2), x[0, 0]))(X)


def test_setting_shape_or_dtype_in_place_is_refused_naming_what_to_write():
    def reshaped(x):
        y = x * 1
        y.shape = (x.size,)
        return y

    def retyped(x):
        y = x * 1
        y.dtype = np.int64
        return y

    with pytest.raises(AttributeError, match=r"setting x\.shape .*write x = x\.reshape\(shape\)"):
        jit(reshaped)(X)
    with pytest.raises(AttributeError, match=r"setting x\.dtype .*write x = x\.view\(dtype\)"):
        jit(retyped)(X)
    with pytest.raises(TypeError, match="array does not have imaginary part to set"):
        jit(lambda x: setattr(y := x * 1, "imag", 1.0) or y)(X)


def test_a_traced_roll_shift_is_refused_by_name():
    with pytest.raises(NotImplementedError, match="np.roll: a traced shift"):
        jit(lambda x, s: np.roll(x, s))(X, np.array(2))
    with pytest.raises(NotImplementedError, match="np.roll: a traced shift"):
        jit(lambda x: np.roll(x, [1, np.argmax(x)], axis=(0, 1)))(X)


def test_dlpack_export_of_a_traced_value_is_a_type_error_naming_the_line():
    def shared(x):
        return np.from_dlpack(x) + 1  # NumPy asks x for its memory

    with pytest.raises(TypeError, match=rf"no memory to share through DLPack .*\(at test_compiler_errors\.py:"
                                        rf"{shared.__code__.co_firstlineno + 1}: return np\.from_dlpack\(x\) \+ 1"):
        jit(shared)(X)
    def device_of(x):
        return x * x.__dlpack_device__()[0]

    with pytest.raises(TypeError, match=rf"no memory to share through DLPack .*\(at test_compiler_errors\.py:"
                                        rf"{device_of.__code__.co_firstlineno + 1}: return x \* x\.__dlpack_device__"):
        jit(device_of)(X)


def test_traced_values_hidden_in_a_list_from_numpys_dispatch_are_named_as_such():
    def summed(x):
        return np.sum([x[0], x[1]])  # np.sum is traced, but NumPy dispatches on the list, not on x

    line = summed.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match=rf"sum \(in numpy\.[\w.]+\), called at test_compiler_errors\.py:{line} was "
                                        r"handed it in an argument NumPy's dispatch does not look at\); "
                                        r".*np\.stack\(\[\.\.\.\]\)"):
        jit(summed)(X)
    with pytest.raises(TypeError, match=r"inside a list or tuple handed to a NumPy function with no traced array"):
        jit(lambda x: np.add([x[0, 0], 1], 2))(X)  # a ufunc's C code converts the list: no NumPy frame to name
    with pytest.raises(TypeError, match=r"dispatch does not look at\); .*np\.take_along_axis"):
        jit(lambda x, i: np.take(np.eye(4), i, axis=0))(X, np.array([1, 2]))  # np.take dispatches on the table only


def test_a_numpy_array_indexed_or_assigned_with_a_traced_value_says_what_to_write():
    def one_hot(x, i):
        return np.eye(4, dtype=x.dtype)[i] * x

    with pytest.raises(TypeError, match=rf"test_compiler_errors\.py:{one_hot.__code__.co_firstlineno + 1}: return "
                                        r"np\.eye.*a NumPy array indexed by a traced value .*np\.take_along_axis\("
                                        r"table, i\[:, None\], axis=0\) is table\[i\]"):
        jit(one_hot)(X, np.array([1, 3, 0]))
    want = np.eye(4, dtype=X.dtype)[[1, 3, 0]] * X  # the hint's spelling computes NumPy's result
    got = jit(lambda x, i: np.take_along_axis(np.eye(4, dtype=x.dtype), i[:, None], axis=0) * x)(X, np.array([1, 3, 0]))
    assert got.dtype == want.dtype and np.array_equal(got, want)

    def marked(x, i):
        z = np.zeros(4)
        z[i] = 1
        return x + z

    with pytest.raises(TypeError, match=r"z\[i\] = 1\); a NumPy array cannot take a traced value or index in an "
                                        r"assignment: .*np\.zeros_like\(x, shape=n\)"):
        jit(marked)(X, np.array([1, 2]))


# --------------------------------------------------------------------------- results that are not tensors


@pytest.mark.parametrize("fn, what", [
    (lambda x: 1.5, "result is a float"),
    (lambda x: None, "result is a NoneType"),
    (lambda x: np.ones(3), "result is a ndarray"),
    (lambda x: np.float32(2), "result is a float32"),
    (lambda x: (x, 1.0), r"result\[1\] is a float"),
    (lambda x: {"y": x, "n": None}, r"result\['n'\] is a NoneType"),
    (lambda x: x.shape, r"result\[0\] is a int"),
], ids=["float", "None", "ndarray", "numpy-scalar", "tuple-with-float", "dict-with-None", "shape"])
def test_non_tensor_results_are_type_errors(fn, what):
    with pytest.raises(TypeError, match=f"must return tensors computed from its arguments; {what}"):
        jit(fn)(X)


def test_structured_results_keep_their_structure():
    out = jit(lambda x: {"a": x * 2, "pair": (x.sum(), [x.T])})(X)
    assert set(out) == {"a", "pair"} and isinstance(out["pair"], tuple) and isinstance(out["pair"][1], list)
    np.testing.assert_array_equal(out["pair"][1][0], X.T)
    assert out["pair"][0].dtype == np.float32 and out["pair"][0].shape == ()


# --------------------------------------------------------------------------- nothing crashes

CRASH_PROBES = r'''
import numpy as np
from compiler import jit, ops

x = np.arange(12, dtype=np.float32).reshape(3, 4)
probes = [
    lambda: jit(lambda w, i: w[i])(x, np.array([3])),
    lambda: jit(lambda w, i: w[i])(x, np.array([-4])),
    lambda: jit(lambda w, i: w[:, i])(x, np.array([[2**40]])),
    lambda: jit(lambda w: w[np.array([9])])(x),
    lambda: jit(lambda a, b: a + b)(x),
    lambda: jit(lambda a: a)(np.zeros(3, np.complex64)),
    lambda: jit(lambda a: np.partition(a, 1))(x),
    lambda: jit(lambda a: None)(x),
    lambda: jit(lambda a: a.reshape(7))(x),
    lambda: jit(lambda a, b: a ** b)(np.array([0, 0]), np.array([-1, -2])),
]
errors = 0
for probe in probes:
    try:
        probe()
    except (TypeError, ValueError, IndexError, NotImplementedError):
        errors += 1
ok = jit(ops.softmax)(x.T[::-1])
assert np.allclose(ok, ops.softmax(x.T[::-1]), rtol=1e-6, atol=1e-7)
empty = jit(lambda w, i: w[i])(x, np.zeros((0,), np.int64))
assert empty.shape == (0, 4) and empty.dtype == np.float32
print("errors", errors)
'''


def test_bad_inputs_never_crash_the_process():
    proc = subprocess.run([sys.executable, "-c", CRASH_PROBES], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "errors 10"


@pytest.mark.parametrize("fn", [lambda x: x.transpose(1, 2), lambda x: np.transpose(x, (0, 3)),
                                lambda x: np.transpose(x, (-3, 0))])
def test_transpose_axes_out_of_range_are_axis_errors(fn):
    with pytest.raises(np.exceptions.AxisError):
        fn(np.zeros((2, 3)))  # NumPy refuses them too
    with pytest.raises(np.exceptions.AxisError, match="out of bounds for array of dimension 2"):
        jit(fn)(np.zeros((2, 3)))


def test_like_functions_with_an_unsupported_dtype_name_it():
    with pytest.raises(TypeError, match="dtype complex128 is not supported"):
        jit(lambda x: np.ones_like(x, dtype=np.complex128) + x)(np.ones(3))


def test_concatenate_dtype_follows_same_kind_casting():
    with pytest.raises(TypeError):
        np.concatenate([np.ones(3)] * 2, dtype=np.int8)
    with pytest.raises(TypeError, match="'same_kind'"):
        jit(lambda x: np.concatenate([x, x], dtype=np.int8))(np.ones(3))
    got = jit(lambda x: np.concatenate([x, x], dtype=np.float32))(np.arange(3))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.concatenate([np.arange(3)] * 2, dtype=np.float32))


def test_a_runtime_boolean_mask_is_named_as_unsupported():
    with pytest.raises(NotImplementedError, match="boolean mask indexing"):
        jit(lambda x, m: x[m])(np.arange(3.0), np.array([True, False, True]))


def test_bool_arguments_with_bytes_other_than_0_and_1_read_as_numpy_reads_them():
    """A .view(bool) of other bytes (or bool memory written by C) is True wherever nonzero."""
    u = np.array([2, 1, 0, 3, 255], np.uint8).view(bool)
    fn = lambda x: (x.astype(np.int32), x.sum(), ~x, x == np.ones(5, bool), np.where(x, 1, 2))  # noqa: E731
    for got, expected in zip(jit(fn)(u), fn(u)):
        assert got.dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(got, expected)


def _numpy_error(fn, *args):
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the independent source: whatever NumPy raises
        return e
    raise AssertionError("NumPy raised nothing")


@pytest.mark.parametrize("fn", [
    lambda t, i, e: (t[i + 3], i ** e),          # a computed index fails before an argument exponent
    lambda t, i, e: (t[i + 3], t[e]),            # ... before an argument index
    lambda t, i, e: (i ** (e - 1), t[e * 9]),    # a computed exponent before a computed index
    lambda t, i, e: (i ** (e - 1), t[i + 3]),
], ids=["index-then-argument-exponent", "index-then-argument-index", "exponent-then-index", "exponent-then-index-2"])
def test_the_first_op_that_fails_names_the_error_as_numpy_does(fn):
    """Argument checks run on the host before the kernel, computed ones in it: an argument checked after
    a computed value fails in the kernel too, so the first failing op raises its error, as in NumPy."""
    t, i, e = np.arange(5.0), np.array([0, 3, 1]), np.array([1, -1, 7])
    expected = _numpy_error(fn, t, i, e)
    with pytest.raises(type(expected), match="(?i)" + re.escape(str(expected).rstrip("."))):
        jit(fn)(t, i, e)


def test_an_argument_checked_by_the_kernel_is_named_as_an_argument():
    t, i = np.arange(5.0), np.array([0, 3, 1])
    with pytest.raises(IndexError, match=r"index 7 is out of bounds for axis 0 with size 5 \(argument e, checked "
                       r"with the values computed before it, used at"):
        jit(lambda t, i, e: (t[i + 1], t[e]))(t, i, np.array([1, 7]))
    with pytest.raises(ValueError, match=r"\(argument e, checked with the values computed before it\) held -2"):
        jit(lambda t, i, e: (t[i + 1], i ** e))(t, i, np.array([1, -2, 0]))


@pytest.mark.parametrize("fn,args", [
    (lambda t, i: t[i * 2], (np.array([1, -3, 5, 0]),)),          # -6 first, 10 the largest
    (lambda t, i: t[i.T * 1], (np.array([[0, 9], [-8, 0]]),)),     # C order of the index as used: -8
    (lambda t, i: t[i.astype(np.int8), 0], (np.array([200, 300, 0]),)),
    (lambda t, i: t[i + 0, np.argmax(i) + 6], (np.array([9, 0, 0]),)),  # a 0-d index is NumPy's integer: first
], ids=["first", "transposed", "int8", "zero-d-first"])
def test_an_out_of_range_computed_index_is_named_as_numpy_names_it(fn, args):
    table = np.arange(30.0).reshape(5, 6)
    with pytest.raises(IndexError) as expected:
        fn(table, *args)  # the independent source of the behaviour
    with pytest.raises(IndexError, match=re.escape(str(expected.value)) + r" \(an index computed in the kernel"):
        jit(fn)(table, *args)


@pytest.mark.parametrize("filename", ["{cell}.py", "cell{0}.py", "a}b.py"])
def test_a_source_path_with_braces_still_names_the_error(filename):
    """The kernel-check message names the source line; braces in its path are text, not format fields."""
    namespace = {"np": np}
    exec(compile("def f(t, i):\n    return t[i + 1]\ndef g(b, e):\n    return b ** (e - 1)\n", filename, "exec"), namespace)
    with pytest.raises(IndexError, match=re.escape(f"used at {filename}:2;")):
        jit(namespace["f"])(np.arange(3.0), np.array([5]))
    with pytest.raises(ValueError, match=re.escape(f"for np.power at {filename}:4 (an exponent computed in the kernel) held -1")):
        jit(namespace["g"])(np.arange(3), np.array([0]))


_MODULE_RNG = np.random.default_rng(7)


def test_drawing_random_numbers_while_traced_is_refused_naming_the_generator():
    """NumPy draws new numbers at every call; a trace would bake the first call's into the compiled code."""
    import random
    rng = np.random.default_rng(0)
    legacy = np.random.RandomState(1)
    for fn, named in [(lambda x: x + np.random.rand(4), "the global np.random state"),
                      (lambda x: x * rng.normal(size=x.shape), "rng"),
                      (lambda x: x + legacy.uniform(), "legacy"),
                      (lambda x: x + _MODULE_RNG.integers(3), "_MODULE_RNG"),
                      (lambda x: x + random.random(), "Python's random module")]:
        with pytest.raises(NotImplementedError, match=f"drew random numbers from {re.escape(named)}.* while it was traced"):
            jit(fn)(X)


def test_random_numbers_the_function_makes_afresh_at_every_call_are_followed():
    # a generator seeded inside gives NumPy the same numbers at every call: constants, as traced; one named but
    # drawn from only outside the function is untouched by the trace
    rng = np.random.default_rng(3)
    fn = jit(lambda x: x + np.random.default_rng(5).normal(size=x.shape) + 0 * rng.bit_generator.state["state"]["inc"])
    first = fn(X)
    rng.normal()
    np.testing.assert_array_equal(first, X + np.random.default_rng(5).normal(size=X.shape))
    np.testing.assert_array_equal(fn(X), first)


def test_python_conversions_a_trace_cannot_answer_say_what_to_write_instead():
    """Each needs the value as Python sees it (an int, a bool, a formatted string), which the kernel makes."""
    for fn, message in [(lambda x: x + round(x.sum()), r"round\(\) of a traced NumPy scalar without ndigits.*np\.round"),
                        (lambda x: x * (2.5 in x), r"`value in x`.*np\.any\(x == value\)"),
                        (lambda x: x if format(x.sum(), ".2f") else x, r"format\(x, '\.2f'\) of a traced value")]:
        with pytest.raises(TypeError, match=message):
            jit(fn)(X)


def test_a_numpy_scalar_compared_with_none_or_a_string_is_numpys_constant():
    # NumPy's scalars answer Python's bool for None and a NumPy bool for a string, whatever their value
    fn = lambda x: x + (x.sum() == None) + (x.sum() != None) * 2 + (x.max() != "s") * 4  # noqa: E711
    got, want = jit(fn)(X), fn(X)
    np.testing.assert_array_equal(got, X + 6.0)
    assert got.dtype == want.dtype == np.float64  # (np.True_ * 4 is NumPy's int64 scalar: no weak Python int)
