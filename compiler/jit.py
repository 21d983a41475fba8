"""``jit``: trace a Python function on typed placeholders, compile it for a target
and run it on NumPy arrays. Specializations are keyed by the argument structure,
shapes, dtypes, static values and target; the compiled boundary validates and
copies inputs so native code only ever sees well-formed, checked buffers."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import pickle
import random
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import dtypes as dt
from . import layout
from . import primitives as P
from .backend import get_target
from .errors import located_compile_errors
from .graph import Node, input_node, topological
from .gpu_memory import DeviceArray, empty
from .lowering import LoweredModule, build_module
from .tracer import Tensor, element_assignment_error

# --------------------------------------------------------------------------- pytrees
# Arrays are dynamic leaves; everything else (ints, strings, None, ...) is static and
# part of the specialization key.


def _flatten(obj, path: str, leaves: list, paths: list):
    if isinstance(obj, (np.ndarray, np.generic)):
        obj = np.asarray(obj)
        if not obj.dtype.isnative:  # the same values in this machine's byte order, as NumPy computes
            obj = obj.astype(obj.dtype.newbyteorder("="))
        leaves.append(obj)
        paths.append(path)
        return ("array",)
    if isinstance(obj, DeviceArray):  # stays where it is: no boundary copy, passed to kernels as is
        leaves.append(obj)
        paths.append(path)
        return ("array",)
    if isinstance(obj, Tensor):
        raise TypeError(f"argument {path}: a traced Tensor cannot be passed to a compiled function (call the plain function instead)")
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ("namedtuple", type(obj), tuple(_flatten(v, f"{path}.{f}", leaves, paths) for f, v in zip(obj._fields, obj)))
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__, tuple(_flatten(v, f"{path}[{i}]", leaves, paths) for i, v in enumerate(obj)))
    if isinstance(obj, dict):
        keys = tuple(obj)
        return ("dict", keys, tuple(_flatten(obj[k], f"{path}[{k!r}]", leaves, paths) for k in keys))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = tuple(f.name for f in dataclasses.fields(obj))
        return ("dataclass", type(obj), names, tuple(_flatten(getattr(obj, n), f"{path}.{n}", leaves, paths) for n in names))
    try:
        hash(obj)
    except TypeError:
        raise TypeError(f"argument {path}: static value of type {type(obj).__name__} is not hashable and is not an array") from None
    held = sorted(k for k, v in getattr(obj, "__dict__", {}).items() if isinstance(v, (np.ndarray, DeviceArray)))
    if held and type(obj).__hash__ is object.__hash__:
        raise TypeError(
            f"argument {path}: a {type(obj).__name__} holding arrays ({', '.join(held)}) would be a static value keyed "
            "by identity, so its arrays would be baked into the compiled code at the first call and later changes "
            "ignored; make it a dataclass or namedtuple (its arrays become arguments), or pass the arrays themselves")
    return ("static", StaticValue(obj))


class StaticValue:
    """A non-array argument as part of a specialization key: equal only to a value of the same
    type with the same bits, so ``1``, ``1.0``, ``True`` and ``np.float32(1)`` (which promote
    differently) and ``0.0`` and ``-0.0`` get their own specializations, and a NaN meets itself."""

    __slots__ = ("value", "key")

    def __init__(self, value):
        self.value = value
        self.key = _static_key(value)

    def __eq__(self, other):
        return isinstance(other, StaticValue) and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return f"StaticValue({self.value!r})"


def _static_key(value):
    if isinstance(value, (float, complex, np.generic)):
        return type(value), np.asarray(value).tobytes()
    if isinstance(value, (tuple, frozenset)):
        items = sorted(map(_static_key, value), key=repr) if isinstance(value, frozenset) else map(_static_key, value)
        return type(value), tuple(items)
    return type(value), value


def _unflatten(tree, leaves):
    kind = tree[0]
    if kind == "array":
        return next(leaves)
    if kind == "scalar":
        leaf = next(leaves)
        return leaf[()] if isinstance(leaf, np.ndarray) else leaf  # a DeviceArray stays on the device
    if kind == "static":
        return tree[1].value
    if kind == "checked":  # the results, then (failed, witness) of each run-time check
        result = _unflatten(tree[1], leaves)
        for check in tree[2]:
            failed, witness = _host_scalar(next(leaves)), _host_scalar(next(leaves))
            if failed and issubclass(check.error, Warning):
                for _ in range(int(witness)):  # NumPy warns per slice where it does
                    _warn_caller(check.describe(int(witness)), check.error)
            elif failed:
                raise check.error(check.describe(int(witness)))
        return result
    if kind == "warned":  # NumPy's warnings met while tracing: NumPy gives them at every call
        for category, message in tree[2]:
            _warn_caller(message, category)
        return _unflatten(tree[1], leaves)
    if kind == "namedtuple":
        return tree[1](*[_unflatten(t, leaves) for t in tree[2]])
    if kind in ("tuple", "list"):
        items = [_unflatten(t, leaves) for t in tree[1]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {k: _unflatten(t, leaves) for k, t in zip(tree[1], tree[2])}
    if kind == "dataclass":
        cls, names, subtrees = tree[1], tree[2], tree[3]
        obj = cls.__new__(cls)
        for n, t in zip(names, subtrees):
            object.__setattr__(obj, n, _unflatten(t, leaves))
        return obj
    raise AssertionError(kind)


def _host_scalar(leaf):
    """A 0-d result's value on the host; a build-only placeholder's is 0 (nothing ran)."""
    if isinstance(leaf, DeviceArray):
        return 0 if leaf.is_placeholder else leaf.to_host()[()]
    return leaf[()]


def map_arrays(fn, tree):
    """``tree`` (nested tuples, lists, dicts, dataclasses) with ``fn`` applied to every array leaf."""
    leaves, paths = [], []
    structure = _flatten(tree, "tree", leaves, paths)
    return _unflatten(structure, iter(fn(leaf) for leaf in leaves))


def _flatten_outputs(out, path="result"):
    if isinstance(out, Tensor):
        # a 0-d result NumPy gives as a scalar (np.sum(x), x[0] of a vector) comes back as one
        return [out.node], ("scalar",) if out.numpy_scalar else ("array",)
    if isinstance(out, (tuple, list)):
        nodes, trees = [], []
        for i, o in enumerate(out):
            n, t = _flatten_outputs(o, f"{path}[{i}]")
            nodes += n
            trees.append(t)
        if isinstance(out, tuple) and hasattr(out, "_fields"):
            return nodes, ("namedtuple", type(out), tuple(trees))
        # other tuple/list subclasses come back as plain tuples/lists (their constructors are unknown)
        return nodes, ("tuple" if isinstance(out, tuple) else "list", tuple(trees))
    if isinstance(out, dict):
        nodes, trees = [], []
        for k, o in out.items():
            n, t = _flatten_outputs(o, f"{path}[{k!r}]")
            nodes += n
            trees.append(t)
        return nodes, ("dict", tuple(out), tuple(trees))
    from .numpy_api import MaskedRead
    if isinstance(out, MaskedRead):
        out.refuse()  # x[mask]: the data decides its shape
    raise TypeError(
        f"a compiled function must return tensors computed from its arguments; {path} is a {type(out).__name__}")


# --------------------------------------------------------------------------- specializations


@dataclass
class Specialization:
    inputs: list[Node]
    outputs: list[Node]
    out_tree: tuple
    lowered: LoweredModule
    host_checks: list[tuple]    # (leaf position, argument path, problem): see _host_checks
    paths: list[str]
    kernel: object = None
    # per result: the axes it lies in memory in (its kernel output is transposed into them, and the
    # result is a transposed view of that), where NumPy's result would be laid out otherwise than C
    memory_axes: tuple = ()

    @property
    def ir(self) -> str:
        return self.lowered.text


def trace(fn, args, kwargs, func_name="main"):
    """Trace ``fn`` on placeholders for the array leaves of ``args``; returns (inputs, outputs, out_tree, paths)."""
    leaves, paths = [], []
    names = _argument_names(fn, len(args))
    tree = tuple(_flatten(a, names[i], leaves, paths) for i, a in enumerate(args))
    inputs = []
    for i, (leaf, path) in enumerate(zip(leaves, paths)):
        if leaf.dtype not in dt.SUPPORTED:
            raise TypeError(f"argument {path}: dtype {leaf.dtype} is not supported (supported: {', '.join(sorted(str(d) for d in dt.SUPPORTED))})")
        inputs.append(input_node(i, path, leaf.shape, leaf.dtype, device_resident=isinstance(leaf, DeviceArray),
                                 strides=layout.argument_strides(leaf)))
    placeholders = iter(Tensor(n, aliases=f"the argument {path}") for n, path in zip(inputs, paths))
    traced_args = _unflatten(("tuple", tree), placeholders)
    with P.runtime_checks() as checks, warnings.catch_warnings(record=True) as met, _no_random_draws(fn):
        warnings.simplefilter("always")
        try:
            out = fn(*traced_args, **kwargs)
        except ValueError as error:
            clearer = element_assignment_error(error)
            if clearer is None:
                raise
            raise clearer from error
    outputs, out_tree = _flatten_outputs(out)
    if checks:  # the kernel also reports them; _unflatten raises (or warns) for a failed one
        outputs = outputs + [n for check in checks for n in (check.failed, check.witness)]
        out_tree = ("checked", out_tree, tuple(checks))
    if met:  # warnings that depend only on shapes, dtypes and constants, given again at every call
        out_tree = ("warned", out_tree, tuple((w.category, str(w.message)) for w in met))
    return inputs, outputs, out_tree, paths


# --------------------------------------------------------------------------- random draws
# NumPy's random functions are no array functions: a traced function that draws from a generator gets the
# numbers at trace time, and its compiled code would repeat them at every call where NumPy draws new ones.
# The generators a function can reach by name (the global np.random state, Python's random module, and
# Generator/RandomState/BitGenerator objects among its closure variables and the globals its code names)
# are compared before and after the trace.


def _generators_named_by(fn) -> dict:
    """{name: generator} for the random generators ``fn`` names (closure variables, globals its code or
    nested code names; a bound method's instance attributes; a partial's function and arguments)."""
    found, seen = {}, set()

    def consider(name, value):
        if isinstance(value, (np.random.Generator, np.random.RandomState, np.random.BitGenerator)):
            found.setdefault(name, value)

    def walk(f, depth=0):
        if depth > 3 or id(f) in seen:
            return
        seen.add(id(f))
        if isinstance(f, functools.partial):
            for value in (*f.args, *f.keywords.values()):
                consider(f"an argument of {getattr(f.func, '__name__', 'the partial')}", value)
            walk(f.func, depth + 1)
            return
        if inspect.ismethod(f):
            for name, value in vars(f.__self__).items() if hasattr(f.__self__, "__dict__") else ():
                consider(f"self.{name}", value)
            f = f.__func__
        code = getattr(f, "__code__", None)
        if code is None:
            return
        for name, cell in zip(code.co_freevars, f.__closure__ or ()):
            with contextlib.suppress(ValueError):  # (an empty cell)
                consider(name, cell.cell_contents)
                if inspect.isfunction(cell.cell_contents):
                    walk(cell.cell_contents, depth + 1)
        names, codes = set(), [code]
        while codes:
            c = codes.pop()
            names.update(c.co_names)
            codes.extend(k for k in c.co_consts if inspect.iscode(k))
        for name in names:
            value = f.__globals__.get(name)
            consider(name, value)
            if inspect.isfunction(value):
                walk(value, depth + 1)
    walk(fn)
    return found


def _generator_state(generator) -> bytes:
    bit_generator = generator if isinstance(generator, np.random.BitGenerator) else \
        getattr(generator, "bit_generator", None) or generator._bit_generator
    return pickle.dumps(bit_generator.state)


@contextlib.contextmanager
def _no_random_draws(fn):
    """Refuses a trace that drew random numbers (see above), naming the generator."""
    generators = _generators_named_by(fn)
    generators["the global np.random state (np.random.rand, np.random.normal, ...)"] = np.random.mtrand._rand
    before = {name: _generator_state(g) for name, g in generators.items()}
    python_before = random.getstate()
    yield
    drawn = [name for name, g in generators.items() if _generator_state(g) != before[name]]
    if random.getstate() != python_before:
        drawn.append("Python's random module")
    if drawn:
        raise NotImplementedError(
            f"the function drew random numbers from {drawn[0]} while it was traced: NumPy draws new ones at every "
            "call, a compiled function would repeat the ones drawn once; draw them outside it and pass them in as "
            "an argument")


@functools.lru_cache(maxsize=256)
def _positional_names(fn) -> tuple[str, ...]:
    # cached: every compiled call names its arguments, and inspect.signature is slow
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _argument_names(fn, count):
    """Parameter names for error messages; positions (``#i``) where the signature has none."""
    positional = _positional_names(fn)
    return [positional[i] if i < len(positional) else f"#{i}" for i in range(count)]


def _index_in_range(size: int):
    def problem(idx: np.ndarray):
        if idx.size and (idx.min() < -size or idx.max() >= size):
            bad = idx[(idx < -size) | (idx >= size)].flat[0]
            return P.IndexOutOfBounds, f"index {int(bad)} is out of range for an axis of size {size}"
        return None
    return problem


def _nonnegative_exponent(exponent: np.ndarray):
    if exponent.size and exponent.min() < 0:
        return ValueError, f"{P.NEGATIVE_INTEGER_POWER}; it holds {int(exponent.min())}"
    return None


def _host_checks(inputs, outputs, paths) -> list[tuple]:
    """(leaf position, argument path, problem) for every argument whose values native code relies on:
    gather indices in range, integer exponents non-negative. ``problem(array)`` is None or (the error
    to raise, what is wrong). Computed ones, and argument ones traced after a computed one, are checked by the
    kernel: see ``primitives.check_at_run_time``."""
    checks = []
    for node in topological(outputs):
        found = []
        if node.op == "gather":
            table, axis = node.inputs[0], node.attrs["axis"]
            found = [(P.value_source(idx), _index_in_range(table.shape[axis + j]))
                     for j, idx in enumerate(node.inputs[1:])]
        elif (arg := P.integer_exponent_source(node)) is not None:
            found = [(arg, _nonnegative_exponent)]
        for arg, problem in found:
            if arg.op != "input" or arg.attrs.get("device_resident"):
                continue  # a constant, checked when traced, or values only a kernel knows, checked there
            checks.append((arg.index, paths[arg.index], problem))
    return checks


# op name -> output factor, set by compiler.testing.inject_fault (module-level so every
# JitFunction sees it; it is part of the specialization key and of the IR)
FAULTS: dict = {}


class JitFunction:
    """A traced-and-compiled function; call it with NumPy arrays."""

    def __init__(self, fn, target: str = "cpu", device_outputs: bool = False):
        if device_outputs and target != "gpu":
            raise ValueError(f"device_outputs needs the gpu target, not {target!r}")
        self.fn = fn
        self.target = target
        self.device_outputs = device_outputs  # results stay in GPU memory, as DeviceArrays
        self._cache: dict = {}
        self._lock = threading.RLock()  # re-entrant: the traced function may call this jit function on arrays
        self.compile_count = 0
        functools.update_wrapper(self, fn)

    def _key(self, args, kwargs):
        leaves, paths = [], []
        names = _argument_names(self.fn, len(args))
        tree = tuple(_flatten(a, names[i], leaves, paths) for i, a in enumerate(args))
        for k, v in kwargs.items():
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"keyword argument {k!r} is static and must be hashable, got {type(v).__name__}") from None
        sig = tuple((leaf.shape, leaf.dtype.str, isinstance(leaf, DeviceArray)) for leaf in leaves)
        if self.target != "gpu" and any(resident for _, _, resident in sig):
            path = next(p for (_, _, resident), p in zip(sig, paths) if resident)
            raise TypeError(f"argument {path}: a DeviceArray lives in GPU memory; this function is compiled "
                            f"for the {self.target} target (pass a NumPy array, or use target='gpu')")
        static_kwargs = tuple(sorted((k, StaticValue(v)) for k, v in kwargs.items()))
        key = (tree, sig, static_kwargs, get_target(self.target).specialization_tag(),
               tuple(sorted(FAULTS.items())))
        # an argument's layout is the order NumPy sums it in: see _traced
        return (key, tuple(layout.argument_strides(leaf) for leaf in leaves)), leaves, paths

    def specialize(self, *args, **kwargs) -> Specialization:
        key, _, _ = self._key(args, kwargs)
        return self._specialization(key, args, kwargs)

    def _traced(self, key, args, kwargs) -> Specialization:
        """The specialization for ``key`` (the arguments' shapes, dtypes, static values; their layouts).
        Arguments laid out otherwise (a view passed in) are traced again, since NumPy's sums follow
        their layout; where that changes nothing the module computes, the kernel is shared."""
        spec = self._cache.get(key)
        if spec is None:
            inputs, outputs, out_tree, paths = trace(self.fn, args, kwargs)
            axes = () if self.device_outputs else _memory_axes(outputs)
            written = [P.transpose(o, a) if a else o for o, a in zip(outputs, axes)] if any(axes) else outputs
            lowered = build_module(inputs, written, faults=dict(FAULTS), device_outputs=self.device_outputs,
                                   **get_target(self.target).lowering_form())
            spec = next((other for (shapes, _), other in self._cache.items() if shapes == key[0]
                         and _same_module(other.lowered, lowered) and other.memory_axes == axes), None)
            if spec is None:
                spec = Specialization(inputs, outputs, out_tree, lowered, _host_checks(inputs, outputs, paths), paths,
                                      memory_axes=axes)
            self._cache[key] = spec
        return spec

    def _specialization(self, key, args, kwargs) -> Specialization:
        with self._lock:
            spec = self._traced(key, args, kwargs)
            if spec.kernel is None:
                with located_compile_errors(spec.lowered):
                    spec.kernel = get_target(self.target).compile(spec.lowered)
                self.compile_count += 1
            return spec

    def _build_only(self, key, args, kwargs, log: BuildLog):
        with self._lock:
            spec = self._traced(key, args, kwargs)
        if spec.kernel is None and id(spec) not in log._seen:
            log._seen.add(id(spec))
            start = time.perf_counter()
            with located_compile_errors(spec.lowered):
                built = get_target(self.target).build(spec.lowered)
            log.kernels.append(BuiltKernel(getattr(self.fn, "__name__", "?"), self.target, built,
                                           time.perf_counter() - start))
        make = empty if self.device_outputs else np.zeros  # inside build_only, empty gives placeholders
        outputs = [make(shape, dtype) for shape, dtype in spec.lowered.out_specs]
        return _unflatten(spec.out_tree, iter(_laid_out(outputs, spec.memory_axes)))

    def lower(self, *args, **kwargs) -> LoweredModule:
        """Trace only: the tensor-level module, without compiling."""
        inputs, outputs, _, _ = trace(self.fn, args, kwargs)
        return build_module(inputs, outputs, faults=dict(FAULTS), device_outputs=self.device_outputs,
                            **get_target(self.target).lowering_form())

    def __call__(self, *args, **kwargs):
        key, leaves, paths = self._key(args, kwargs)
        log = getattr(_BUILD_ONLY, "log", None)
        if log is not None:
            return self._build_only(key, args, kwargs, log)
        spec = self._specialization(key, args, kwargs)
        return run_specialization(spec, leaves, self.device_outputs)


def _same_module(a: LoweredModule, b: LoweredModule) -> bool:
    return a.text == b.text and len(a.hidden) == len(b.hidden) and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes() for x, y in zip(a.hidden, b.hidden))


# --------------------------------------------------------------------------- ahead-of-time builds


@dataclass
class BuiltKernel:
    function: str
    target: str
    built: bool      # False: the disk cache already held it
    seconds: float


@dataclass
class BuildLog:
    kernels: list[BuiltKernel] = field(default_factory=list)
    _seen: set = field(default_factory=set, repr=False)


_BUILD_ONLY = threading.local()


def building() -> bool:
    """True inside ``build_only()``."""
    return getattr(_BUILD_ONLY, "log", None) is not None


@contextlib.contextmanager
def build_only():
    """Inside this block a compiled function is not run: its kernel is built into the disk cache
    (for the GPU target without a device: ptxas and libdevice suffice) and the call returns zeros
    of the result's shapes and dtypes. Running the program once this way warms the cache for every
    specialization it would meet, as long as its shapes do not depend on computed values."""
    previous = getattr(_BUILD_ONLY, "log", None)
    _BUILD_ONLY.log = log = BuildLog()
    try:
        yield log
    finally:
        _BUILD_ONLY.log = previous


def _boundary_arrays(leaves: list) -> list:
    """Contiguous, non-aliasing copies where needed; native code assumes dense row-major buffers.
    Device arrays are dense already and are never written by kernels."""
    out = []
    for leaf in leaves:
        if isinstance(leaf, DeviceArray):
            if leaf.is_placeholder:
                raise ValueError("a build-only placeholder DeviceArray (made inside build_only()) cannot be run")
            out.append(leaf)
            continue
        arr = np.ascontiguousarray(leaf)
        if arr.shape != leaf.shape:  # ascontiguousarray makes 0-d arrays 1-d
            arr = arr.reshape(leaf.shape)
        if arr.dtype == np.bool_ and arr.size and arr.view(np.uint8).max() > 1:
            # NumPy reads any nonzero byte as True (a .view(bool), bytes from C); kernels assume 0 or 1
            arr = arr.view(np.uint8) != 0
        if any(isinstance(prev, np.ndarray) and np.may_share_memory(arr, prev) for prev in out):
            arr = arr.copy()
        out.append(arr)
    return out


def checked_inputs(leaves: list[np.ndarray], host_checks: list[tuple]) -> list[np.ndarray]:
    """The arrays native code may see: dense copies where needed, every host check passed."""
    arrays = _boundary_arrays(leaves)
    for pos, path, problem in host_checks:
        found = problem(arrays[pos])
        if found is not None:
            error, message = found
            raise error(f"argument {path}: {message}")
    return arrays


def _warn_caller(message: str, category: type) -> None:
    """Warn as NumPy would, pointing at the first frame outside this module (the compiled function's caller)."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def run_specialization(spec: Specialization, leaves: list[np.ndarray], device_outputs: bool = False):
    arrays = checked_inputs(leaves, spec.host_checks)
    outputs = [(empty if device_outputs else np.empty)(shape, dtype) for shape, dtype in spec.lowered.out_specs]
    spec.kernel(arrays + list(spec.lowered.hidden) + outputs)
    return _unflatten(spec.out_tree, iter(_laid_out(outputs, spec.memory_axes)))


def _memory_axes(outputs: list[Node]) -> tuple:
    """For each result, the axes NumPy's array would lie in memory in (``layout.memory_axes``): a
    transpose's view, a ufunc of one, a Fortran copy come back laid out as NumPy's do, so NumPy code
    that goes on with them (a sum follows memory order) meets the same strides; None for C's order."""
    return tuple(layout.memory_axes(o.shape, layout.strides_of(o)) if layout.known(o) else None for o in outputs)


def _laid_out(outputs: list, memory_axes: tuple) -> list:
    """The kernel's outputs, each written in its memory order, as views in the result's own axes."""
    if not any(memory_axes):
        return outputs
    return [o if a is None else o.transpose(np.argsort(a)) for o, a in zip(outputs, memory_axes)]


def jit(fn=None, *, target: str = "cpu", device_outputs: bool = False):
    """Compile ``fn`` (decorator or call). ``target`` is "cpu" or "gpu"; ``device_outputs`` (gpu only):
    return the results as ``DeviceArray``s in GPU memory instead of copying them back."""
    if fn is None:
        return lambda f: JitFunction(f, target, device_outputs)
    return JitFunction(fn, target, device_outputs)
