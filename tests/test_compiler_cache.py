"""Specialization caching: in memory (a second call compiles nothing, a new shape,
dtype or static value specializes anew) and on disk (a second process loads the
kernel from ``PARITY_CACHE``; a corrupt or foreign entry is ignored and rebuilt)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from compiler import jit, ops


def test_second_call_compiles_nothing():
    f = jit(ops.softmax)
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    first = f(x)
    assert f.compile_count == 1
    second = f(x * 2)
    assert f.compile_count == 1
    np.testing.assert_allclose(second, ops.softmax(x * 2), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(first, ops.softmax(x), rtol=1e-6, atol=1e-7)


def test_new_shape_dtype_or_static_value_specializes():
    def scaled(x, factor=2.0):
        return x * factor

    f = jit(scaled)
    a32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert f(a32).dtype == np.float32 and f.compile_count == 1
    out = f(a32.reshape(3, 2))
    assert out.shape == (3, 2) and f.compile_count == 2
    out = f(a32.astype(np.float64))
    assert out.dtype == np.float64 and f.compile_count == 3
    out = f(a32, factor=3.0)  # static keyword: part of the key
    np.testing.assert_array_equal(out, a32 * 3.0)
    assert f.compile_count == 4
    f(a32), f(a32.reshape(3, 2)), f(a32.astype(np.float64)), f(a32, factor=3.0)
    assert f.compile_count == 4
    # a strided view of the same shape and dtype reuses the kernel: its layout changes no sum here, and
    # NumPy lays the product out in C order all the same
    strided = np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]
    np.testing.assert_array_equal(f(strided), strided * 2.0)
    assert f.compile_count == 4
    # a Fortran-ordered one does not: NumPy's product is Fortran-ordered too, and so is the result
    fortran = f(np.asfortranarray(a32))
    np.testing.assert_array_equal(fortran, a32 * 2.0)
    assert fortran.strides == (np.asfortranarray(a32) * 2.0).strides and f.compile_count == 5


@pytest.mark.parametrize("x, first, second", [
    (np.array([100, 2], np.int8), 1, 1.0), (np.array([100, 2], np.int8), 2, np.float32(2)),
    (np.array([True, False]), True, 1), (np.array([1.0, -2.0]), 0.0, -0.0),
    (np.array([1.5, 3.0], np.float32), 1.0, np.float64(1.0))])
def test_equal_static_values_of_other_types_or_signs_specialize_apart(x, first, second):
    """1, 1.0, True, np.float32(2), np.float64(1.0) and -0.0 compare equal to their partners but
    promote (or divide) differently, so each gets its own specialization, keyword or positional."""
    by_keyword = jit(lambda a, c=0: (a * c, a / c, a + c))
    by_position = jit(lambda a, c: (a * c, a / c, a + c))
    with np.errstate(all="ignore"):
        for c in (first, second):
            expected = (x * c, x / c, x + c)
            for got in (by_keyword(x, c=c), by_position(x, c)):
                for g, e in zip(got, expected):
                    assert g.dtype == e.dtype
                    np.testing.assert_array_equal(g, e)
                    np.testing.assert_array_equal(np.signbit(g), np.signbit(e))
    assert by_keyword.compile_count == by_position.compile_count == 2


def test_a_static_nan_reuses_its_specialization():
    f = jit(lambda a, c: a + c)
    x = np.ones(3)
    for _ in range(3):
        assert np.isnan(f(x, float("nan"))).all()
    assert f.compile_count == 1


def test_static_positional_values_are_part_of_the_key():
    def power(x, n):
        return x**n

    f = jit(power)
    x = np.linspace(1, 2, 4)
    np.testing.assert_allclose(f(x, 2), x**2, rtol=1e-15)
    np.testing.assert_allclose(f(x, 3), x**3, rtol=1e-15)
    assert f.compile_count == 2


# --------------------------------------------------------------------------- disk cache across processes

SCRIPT = '''
import json, sys
import numpy as np
from compiler import jit

def block(x, g, b):
    mean = np.mean(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(np.var(x, axis=-1, keepdims=True) + 1e-5) + b

rng = np.random.default_rng(0)
x = rng.standard_normal((4, 16)).astype(np.float32)
g, b = rng.standard_normal(16).astype(np.float32), rng.standard_normal(16).astype(np.float32)
f = jit(block)
spec = f.specialize(x, g, b)
got = f(x, g, b)
print(json.dumps({
    "from_disk_cache": bool(getattr(spec.kernel, "from_disk_cache", False)),
    "correct": bool(got.dtype == np.float32 and np.allclose(got, block(x, g, b), rtol=2e-6, atol=2e-6)),
    "compile_count": f.compile_count,
}))
'''


def run_script(script: Path, cache: Path) -> dict:
    env = {**os.environ, "PARITY_CACHE": str(cache)}
    env.pop("PARITY_NO_DISK_CACHE", None)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def entries(cache: Path) -> list[Path]:
    root = cache / "kernels"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.exists() else []


@pytest.fixture(scope="module")
def populated(tmp_path_factory):
    """A script and a cache that the script's first run filled."""
    base = tmp_path_factory.mktemp("disk-cache")
    script = base / "kernel_user.py"
    script.write_text(SCRIPT)
    cache = base / "cache"
    first = run_script(script, cache)
    assert first == {"from_disk_cache": False, "correct": True, "compile_count": 1}
    assert len(entries(cache)) == 1
    return script, cache


def test_second_process_loads_kernel_from_disk(populated):
    script, cache = populated
    second = run_script(script, cache)
    assert second == {"from_disk_cache": True, "correct": True, "compile_count": 1}
    assert len(entries(cache)) == 1
    entry = entries(cache)[0]
    assert sorted(p.name for p in entry.iterdir()) == ["kernel.so", "meta.json"]


def test_a_checkout_elsewhere_shares_the_cached_kernel(populated, tmp_path):
    """Source locations (absolute paths) are in the IR but not in the key: they never change the code."""
    script, cache = populated
    moved = tmp_path / "elsewhere" / "other_name.py"
    moved.parent.mkdir()
    moved.write_text("\n\n" + script.read_text())  # other path, other line numbers
    assert run_script(moved, cache) == {"from_disk_cache": True, "correct": True, "compile_count": 1}
    assert len(entries(cache)) == 1


def test_build_only_fills_the_cache_for_a_later_process(tmp_path):
    import compiler
    from compiler.backend import kernel_cache_dir

    script = tmp_path / "kernel_user.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"
    saved = os.environ.get("PARITY_CACHE")
    os.environ["PARITY_CACHE"] = str(cache)
    try:
        namespace = {"__name__": "kernel_user_module"}
        exec(compile(SCRIPT.split("rng = ")[0], str(script), "exec"), namespace)  # defines block(), runs nothing
        x = np.ones((4, 16), np.float32)
        with compiler.build_only() as log:
            out = jit(namespace["block"])(x, x[0], x[0])
        assert out.dtype == np.float32 and out.shape == (4, 16) and not out.any()
        assert [k.built for k in log.kernels] == [True]
        assert kernel_cache_dir() == cache / "kernels"
    finally:
        if saved is None:
            os.environ.pop("PARITY_CACHE")
        else:
            os.environ["PARITY_CACHE"] = saved
    assert run_script(script, cache) == {"from_disk_cache": True, "correct": True, "compile_count": 1}


def _truncate_library(entry: Path):
    so = entry / "kernel.so"
    so.write_bytes(so.read_bytes()[:100])


def _garbage_meta(entry: Path):
    (entry / "meta.json").write_text("{not json")


def _meta_not_an_object(entry: Path):
    (entry / "meta.json").write_text("[1, 2, 3]")


def _other_toolchain(entry: Path):
    meta = json.loads((entry / "meta.json").read_text())
    meta["toolchain"] = "xtc-mlir-python-bindings=0.0.1;parity-pipeline=0"
    (entry / "meta.json").write_text(json.dumps(meta))


def _garbage_library_with_matching_hash(entry: Path):
    import hashlib

    junk = b"\x7fELF" + os.urandom(2000)
    (entry / "kernel.so").write_bytes(junk)
    meta = json.loads((entry / "meta.json").read_text())
    meta["sha256"] = hashlib.sha256(junk).hexdigest()
    (entry / "meta.json").write_text(json.dumps(meta))


def _missing_library(entry: Path):
    (entry / "kernel.so").unlink()


@pytest.mark.parametrize("corrupt", [
    _truncate_library, _garbage_meta, _meta_not_an_object, _other_toolchain,
    _garbage_library_with_matching_hash, _missing_library,
], ids=lambda f: f.__name__.strip("_"))
def test_corrupt_cache_entry_is_ignored_and_rebuilt(populated, tmp_path, corrupt):
    script, populated_cache = populated
    cache = tmp_path / "cache"
    shutil.copytree(populated_cache, cache)
    corrupt(entries(cache)[0])
    rebuilt = run_script(script, cache)
    assert rebuilt == {"from_disk_cache": False, "correct": True, "compile_count": 1}
    # the bad entry was replaced by a good one, which the next process loads
    assert len(entries(cache)) == 1
    again = run_script(script, cache)
    assert again == {"from_disk_cache": True, "correct": True, "compile_count": 1}


def test_leftovers_of_killed_writers_are_swept_but_live_ones_kept(tmp_path, monkeypatch):
    import time

    from compiler.backend import STALE_AFTER_S

    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    root = tmp_path / "kernels"
    stale_tmp, stale_trash, live_tmp = root / ".tmp-dead", root / ".trash-dead", root / ".tmp-live"
    for d in (stale_tmp, stale_trash, live_tmp):
        (d / "entry").mkdir(parents=True)
        (d / "entry" / "kernel.so").write_bytes(b"half-written")
    old = time.time() - STALE_AFTER_S - 60
    for d in (stale_tmp, stale_trash):
        os.utime(d, (old, old))
    f = jit(lambda x: x * 3)
    np.testing.assert_array_equal(f(np.arange(4.0)), np.arange(4.0) * 3)  # compiling stores a kernel: the sweep runs
    assert not stale_tmp.exists() and not stale_trash.exists()
    assert (live_tmp / "entry" / "kernel.so").read_bytes() == b"half-written"
    assert len(entries(tmp_path)) == 1


def test_calls_create_no_ctypes_types():
    """Descriptors are instances of one class per rank: mlir.runtime's helper made a class per call,
    and ctypes keeps a pointer type for each forever (about 9 KiB per argument per call)."""
    import ctypes

    f = jit(lambda x, y: (x + 1, y.sum()))
    x, y = np.arange(3.0), np.ones((2, 2), np.float32)
    f(x, y)
    before = len(ctypes._pointer_type_cache)
    for _ in range(200):
        f(x, y)
    assert len(ctypes._pointer_type_cache) == before


def test_cpu_kernels_are_keyed_by_the_host_cpu(monkeypatch):
    from compiler import backend
    from compiler.jit import JitFunction

    lowered = JitFunction(lambda x: x * 2).lower(np.ones(3))
    here = backend.get_target("cpu").cache_key(lowered)
    monkeypatch.setattr(backend, "host_cpu", lambda: "x86_64:another-cpu")
    assert backend.get_target("cpu").cache_key(lowered) != here


def test_a_cached_kernel_binds_its_own_symbols(tmp_path, monkeypatch):
    """Linked -Bsymbolic: no dynamic relocation may name a symbol the library defines itself (an
    embedding program exporting `main` would otherwise be called through it)."""
    import shutil
    import subprocess

    readelf = shutil.which("readelf")
    assert readelf, "binutils' readelf comes with the C toolchain the kernel cache links with"
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    jit(lambda a, b: a @ b + 1)(np.ones((3, 4), np.float32), np.ones((4, 2), np.float32))
    (library,) = tmp_path.glob("kernels/*/kernel.so")
    defined = set(subprocess.run([shutil.which("nm") or "nm", "-D", "--defined-only", str(library)],
                                 capture_output=True, text=True, check=True).stdout.split())
    relocations = subprocess.run([readelf, "-rW", str(library)], capture_output=True, text=True, check=True).stdout
    named = {line.split()[4] for line in relocations.splitlines() if len(line.split()) >= 5 and "R_X86_64" in line}
    assert "main" in defined and not (named & defined)


def test_no_disk_cache_means_the_cache_is_not_read_either(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    x = np.arange(4.0)
    first = jit(lambda v: v * 3)
    first(x)
    again = jit(lambda v: v * 3)
    assert again.specialize(x).kernel.from_disk_cache  # the entry is there and used
    monkeypatch.setenv("PARITY_NO_DISK_CACHE", "1")
    off = jit(lambda v: v * 3)
    np.testing.assert_array_equal(off(x), x * 3)
    assert not off.specialize(x).kernel.from_disk_cache
    with pytest.raises(RuntimeError, match="needs the kernel cache"):
        from compiler import build_only
        with build_only():
            jit(lambda v: v * 5)(x)


def _imports_mlir_bindings(source: str) -> bool:
    return any(line.strip().startswith(("import mlir", "from mlir")) for line in source.splitlines())


def test_every_module_that_runs_after_the_ir_text_is_in_the_cache_key():
    # the lowering writes IR text; modules that touch the MLIR bindings transform it further, and
    # what they do is invisible in the text a kernel is keyed by
    from compiler import backend
    package = Path(backend.__file__).parent
    post_ir = {p.name for p in package.glob("*.py") if _imports_mlir_bindings(p.read_text())}
    assert post_ir, "the CPU backend itself imports the MLIR bindings"
    assert post_ir <= set(backend.POST_IR_SOURCES), sorted(post_ir - set(backend.POST_IR_SOURCES))


def _cpu_kernel_entries_across_an_edit(tmp_path, module: str, edit) -> tuple[str, set, str, set]:
    """(toolchain version, cache entries) after a CPU kernel is built by a copy of the compiler,
    then by a copy with ``module`` passed through ``edit``, both over one kernel cache."""
    from compiler import backend
    package = Path(backend.__file__).parent
    script = ("import numpy as np, compiler\n"
              "f = compiler.jit(lambda x: x + 1)\n"
              "f(np.zeros(3, np.float32))\n"
              "print(compiler.toolchain_version())\n")

    def run(copy: Path) -> tuple[str, set[str]]:
        env = {**os.environ, "PYTHONPATH": str(copy), "PARITY_CACHE": str(tmp_path / "cache")}
        env.pop("PARITY_NO_DISK_CACHE", None)
        out = subprocess.run([sys.executable, "-c", script], env=env, cwd=copy, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        entries = {p.name for p in (tmp_path / "cache" / "kernels").iterdir() if not p.name.startswith(".")}
        return out.stdout.strip(), entries

    before, after = tmp_path / "before", tmp_path / "after"
    for copy in (before, after):
        shutil.copytree(package, copy / "compiler", ignore=shutil.ignore_patterns("__pycache__"))
    path = after / "compiler" / module
    source = path.read_text()
    edited = edit(source)
    assert edited != source
    path.write_text(edited)
    return (*run(before), *run(after))


def test_a_pipeline_edit_retires_cached_kernels(tmp_path):
    """Editing a pass pipeline in a checkout (no version bumped) changes every kernel's key, so a
    second process never loads kernels the unedited compiler built."""
    version_before, entries_before, version_after, entries_after = _cpu_kernel_entries_across_an_edit(
        tmp_path, "backend.py", lambda s: s.replace('"canonicalize", "cse")', '"canonicalize", "cse", "canonicalize")', 1))
    assert version_before != version_after
    assert len(entries_after) == 2 * len(entries_before), "the edited compiler built its own kernel"


def test_an_edit_of_a_gpu_only_module_keeps_cpu_kernels(tmp_path):
    """CPU kernels depend on backend.py alone of the post-IR modules: a GPU rewrite's edit changes
    the toolchain (and every GPU kernel's key) but not theirs, so the CPU kernel is loaded, not rebuilt."""
    version_before, entries_before, version_after, entries_after = _cpu_kernel_entries_across_an_edit(
        tmp_path, "gpu_matmul.py", lambda s: s + "\n# an edit\n")
    assert version_before != version_after
    assert entries_after == entries_before and len(entries_before) == 1


def _add_constant(k: float):
    return jit(lambda x: x * 3.0 + k)  # another constant: other IR, another cache entry


def test_the_cache_is_bounded_least_recently_used_first(tmp_path, monkeypatch):
    from compiler import backend
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    x = np.ones(4, np.float32)
    np.testing.assert_array_equal(_add_constant(0.5)(x), np.full(4, 3.5, np.float32))
    root = backend.kernel_cache_dir()
    (first,) = list(root.iterdir())
    entry_bytes = sum(f.stat().st_size for f in first.iterdir())
    # room for four entries: the fifth store goes over, and eviction goes down to 80% (three)
    monkeypatch.setenv("PARITY_KERNEL_CACHE_MB", str(4.5 * entry_bytes / (1 << 20)))
    stored = [first]
    for k in (1.5, 2.5, 3.5):
        _add_constant(k)(x)
        stored.append(next(e for e in root.iterdir() if e not in stored))
    old = os.stat(first / "meta.json").st_mtime - 100
    for i, entry in enumerate(stored):  # last use in store order, with the first one used again last
        os.utime(entry / "meta.json", (old + i, old + i))
    assert backend.cached_library(first.name, json.loads((first / "meta.json").read_text())["func"]) is not None

    result = _add_constant(4.5)(x)
    np.testing.assert_array_equal(result, np.full(4, 7.5, np.float32))
    kept = {e for e in root.iterdir() if not e.name.startswith(".")}
    assert len(kept) == 3
    assert stored[1] not in kept and stored[2] not in kept, "the least recently used went first"
    assert first in kept and stored[3] in kept


@pytest.mark.parametrize("value", ["0", "-5", "lots", "inf", "nan"])
def test_a_bad_cache_limit_is_named(tmp_path, monkeypatch, value):
    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    monkeypatch.setenv("PARITY_KERNEL_CACHE_MB", value)
    with pytest.raises(ValueError, match="PARITY_KERNEL_CACHE_MB must be a positive number"):
        _add_constant(7.5)(np.ones(2, np.float32))
