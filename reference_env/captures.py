"""Reference captures, on Parity's side: resolving which reference to run (pinned upstream,
the bundled stand-in, or a user's path/URL), keying captures by what determines them
(reference revision, checkpoint sha256, prompt, token count, the reference env's NumPy),
running the capture runner inside the reference env, and loading verified captures
(npz + JSON metadata) from ``captures/``. A capture that is corrupt, incomplete, has
malformed metadata or is from another checkpoint is never loaded: it is an error naming
the problem, and ``capture`` recaptures it."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import subprocess
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable

import numpy as np

from compiler.paths import STALE_AFTER_S, cache_root, remove_stale

from . import capture_runner
from .bundle import materialize_bundled
from .checkout import Checkout, ensure_checkout, is_local_path, remote_head, verify_checkout
from .env import ReferenceEnv, ensure_env
from .errors import (
    CaptureCorruptError,
    CaptureError,
    CaptureMismatchError,
    ReferenceFallbackError,
    ReferenceRunError,
    ReferenceUnreachableError,
)
from .pin import KIND_BUNDLED, KIND_PATH, KIND_UPSTREAM, UPSTREAM_PIN, ReferencePin

Progress = Callable[[str], None] | None
RUNNER = Path(capture_runner.__file__).resolve()
PROJECT_ROOT = Path(__file__).resolve().parent.parent
CAPTURE_TIMEOUT_S = 3600


# --- which reference --------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedReference:
    """A reference ready to install and run: where it came from and its verified checkout.
    ``banner`` is set whenever the reference is not the pinned upstream at the pinned revision;
    reports must show it prominently."""

    kind: str  # "upstream" | "bundled" | "path"
    url: str
    revision: str
    checkout_path: Path
    banner: str | None = None

    def report(self, numpy_version: str | None = None) -> dict:
        """The report's ``reference`` object."""
        return {"kind": self.kind, "url": self.url, "revision": self.revision, "numpy_version": numpy_version}


def bundled_repo_dir() -> Path:
    return cache_root() / "reference" / "bundled-repo"


def _fallback_banner(pin: ReferencePin, reason: str, revision_override: str | None) -> str:
    lines = [
        "REFERENCE FALLBACK: NOT VERIFYING AGAINST UPSTREAM tiny-gpt2",
        f"The pinned upstream {pin.url} @ {pin.revision} could not be fetched and is not cached",
        f"({reason}).",
        "Using Parity's bundled NumPy re-implementation (same API, formulas and dtypes), kind=bundled.",
        "Pass --strict-reference to make this an error, or --reference PATH to a local clone of upstream.",
    ]
    if revision_override:
        lines.insert(3, f"The requested --reference-rev {revision_override} applies to upstream and was not used.")
    return "\n".join(lines)


def _resolve_upstream(revision: str | None, strict: bool, progress: Progress) -> ResolvedReference:
    pin = UPSTREAM_PIN
    wanted = revision or pin.revision
    try:
        checkout = ensure_checkout(pin.url, wanted)
    except ReferenceUnreachableError as exc:
        if strict:
            raise ReferenceFallbackError(
                f"--strict-reference: the pinned upstream reference {pin.url} @ {wanted} cannot be fetched and "
                f"is not cached ({exc}). Make it reachable, or pass --reference PATH to a local clone"
            ) from exc
        url, bundled_revision = materialize_bundled(bundled_repo_dir())
        checkout = ensure_checkout(url, bundled_revision)
        banner = _fallback_banner(pin, str(exc).split(". Check")[0], revision)
        if progress is not None:
            progress(banner)
        return ResolvedReference(KIND_BUNDLED, url, checkout.revision, checkout.path, banner)
    banner = None
    if wanted != pin.revision:
        banner = f"REFERENCE OVERRIDE: upstream at {wanted}, not the pinned revision {pin.revision}"
    return ResolvedReference(KIND_UPSTREAM, pin.url, checkout.revision, checkout.path, banner)


def _same_url(a: str, b: str) -> bool:
    def norm(u: str) -> str:
        return u.strip().rstrip("/").removesuffix(".git").lower()

    return norm(a) == norm(b)


def resolve_reference(spec: str | os.PathLike | None = "auto", revision: str | None = None,
                      strict: bool = False, progress: Progress = None) -> ResolvedReference:
    """``spec``: "auto" (pinned upstream if fetchable or cached, else the bundled reference with a
    banner; ``strict`` makes that fallback an error), "bundled", a URL, or a local git checkout
    (used in place: it must be clean, and at ``revision`` when one is given)."""
    spec = "auto" if spec is None or str(spec) == "" else str(spec)
    if spec == "auto":
        return _resolve_upstream(revision, strict, progress)
    if spec == "bundled":
        if strict:
            raise ReferenceFallbackError("--strict-reference refuses the bundled reference; use the pinned upstream")
        url, bundled_revision = materialize_bundled(bundled_repo_dir())
        checkout = ensure_checkout(url, bundled_revision)
        banner = "REFERENCE: Parity's bundled NumPy re-implementation, NOT upstream tiny-gpt2 (kind=bundled)"
        return ResolvedReference(KIND_BUNDLED, url, checkout.revision, checkout.path, banner)
    if is_local_path(spec):
        path = Path(spec).expanduser().resolve()
        wanted = revision or _head_or_none(path)
        checkout = verify_checkout(path, wanted or "", url=path.as_uri())
        return ResolvedReference(KIND_PATH, checkout.url, checkout.revision, checkout.path,
                                 f"REFERENCE: local checkout {path} @ {checkout.revision} (kind=path), not the pin")
    wanted = revision or remote_head(spec)
    checkout: Checkout = ensure_checkout(spec, wanted)
    if _same_url(spec, UPSTREAM_PIN.url):
        banner = None if checkout.revision == UPSTREAM_PIN.revision else (
            f"REFERENCE OVERRIDE: upstream at {checkout.revision}, not the pinned revision {UPSTREAM_PIN.revision}")
        return ResolvedReference(KIND_UPSTREAM, UPSTREAM_PIN.url, checkout.revision, checkout.path, banner)
    return ResolvedReference(KIND_PATH, spec, checkout.revision, checkout.path,
                             f"REFERENCE: {spec} @ {checkout.revision} (kind=path), not the pinned upstream")


def _head_or_none(path: Path) -> str | None:
    try:
        import git

        return git.Repo(path).head.commit.hexsha
    except Exception:
        return None  # verify_checkout names the actual problem


# --- capture keys and files ---------------------------------------------------------------------


@dataclass(frozen=True)
class CaptureKey:
    """Everything a capture's content depends on. ``config_sha256`` guards against a changed
    config.json with the same weights (another n_head is another model); ``runner_sha256``
    against a changed capture runner, the code that loads the checkpoint into the reference and
    records what it computes (a capture from a fixed or broken runner must not be reused)."""

    reference_revision: str
    checkpoint_sha256: str
    prompt: str
    tokens: int
    numpy_version: str
    config_sha256: str = ""
    runner_sha256: str = ""

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()

    def file_stem(self) -> str:
        return (f"capture-{self.reference_revision[:12]}-{self.checkpoint_sha256[:12]}-"
                f"{self.tokens}tok-np{self.numpy_version}-{self.digest()[:16]}")


def default_captures_dir() -> Path:
    """``captures/`` of the Parity checkout when running from one, else the cache's."""
    if (PROJECT_ROOT / "captures").is_dir() and (PROJECT_ROOT / "pyproject.toml").is_file():
        return PROJECT_ROOT / "captures"
    return cache_root() / "captures"


def capture_paths(key: CaptureKey, captures_dir: Path | None = None) -> tuple[Path, Path]:
    """(npz, json) paths for ``key``."""
    base = Path(captures_dir) if captures_dir is not None else default_captures_dir()
    stem = key.file_stem()
    return base / f"{stem}.npz", base / f"{stem}.json"


class Capture:
    """A verified capture: per-step tensors by name plus what the reference decoded."""

    def __init__(self, json_path: Path, meta: dict, arrays: dict[str, np.ndarray]):
        self.path = Path(json_path)
        self.npz_path = self.path.with_suffix(".npz")
        self.meta = meta
        self._arrays = arrays
        self.input_ids: np.ndarray = arrays["input_ids"]
        self.output_ids: np.ndarray = arrays["output_ids"]
        self.margins: np.ndarray = arrays["margins"]
        self.completion: str = meta["completion"]
        self.steps: int = int(meta["steps"])
        self.tensor_names: list[str] = list(meta["tensor_names"])
        ref = meta.get("reference") or {}
        self.reference: dict = {"kind": ref.get("kind"), "url": ref.get("url"),
                                "revision": ref.get("revision"), "numpy_version": meta["numpy_version"]}
        self.key = CaptureKey(**meta["key"]) if isinstance(meta.get("key"), dict) else None

    @property
    def reference_inconsistency(self):
        return self.meta.get("reference_inconsistency")

    def tensor(self, step: int, name: str) -> np.ndarray:
        """The reference's ``name`` at decoding ``step`` (0-based): (T, n_embd) residuals and
        embedding for T = prompt length + step; ``logits`` is the last row only (vocab,)."""
        if not 0 <= step < self.steps:
            raise KeyError(f"capture has steps 0..{self.steps - 1}, not {step}")
        if name not in self.tensor_names:
            raise KeyError(f"capture has no tensor {name!r}; it has {', '.join(self.tensor_names)}")
        return self._arrays[f"step{step:03d}/{name}"]

    def __repr__(self) -> str:
        return f"Capture({self.path.name}, steps={self.steps}, reference={self.reference})"


def _corrupt(path: Path, why: str) -> CaptureCorruptError:
    # No advice here: ``capture`` replaces such a file by itself, while a capture given
    # with --capture has to be remade where the reference runs; each caller says which.
    return CaptureCorruptError(f"capture {path} is corrupt or incomplete ({why})")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_id_list(value) -> bool:
    return isinstance(value, list) and all(_is_int(v) and v >= 0 for v in value)


_KEY_TYPES = {f.name: (int if f.name == "tokens" else str) for f in fields(CaptureKey)}
_REFERENCE_KINDS = (KIND_UPSTREAM, KIND_BUNDLED, KIND_PATH)


def _key_problem(key) -> str | None:
    if not isinstance(key, dict):
        return f"its key is {type(key).__name__} {key!r:.40}, not an object"
    unknown = sorted(set(key) - set(_KEY_TYPES))
    if unknown:
        return f"its key has unknown field(s) {', '.join(unknown)}"
    missing = sorted(set(_KEY_TYPES) - set(key) - {"config_sha256", "runner_sha256"})  # older captures lack these
    if missing:
        return f"its key lacks {', '.join(missing)}"
    for name, value in key.items():
        wanted = _KEY_TYPES[name]
        if not (_is_int(value) if wanted is int else isinstance(value, str)):
            return f"key field {name} is {value!r:.40}, not a{'n integer' if wanted is int else ' string'}"
    return None


def _reference_problem(reference) -> str | None:
    if not isinstance(reference, dict):
        return "it does not record which reference took it (no 'reference' object)"
    if reference.get("kind") not in _REFERENCE_KINDS:
        return f"its reference kind is {reference.get('kind')!r}, not one of {', '.join(_REFERENCE_KINDS)}"
    for name in ("url", "revision"):
        if not isinstance(reference.get(name), str):
            return f"its reference {name} is {reference.get(name)!r:.40}, not a string"
    return None


def meta_problem(meta: dict) -> str | None:
    """What is malformed in a capture's metadata (None when nothing is), so a
    hand-edited or foreign file is refused by name rather than failing later
    inside the harness."""
    steps = meta["steps"]
    if not (_is_int(steps) and steps >= 1):
        return f"steps is {steps!r:.40}, not an integer >= 1"
    names = meta["tensor_names"]
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        return "tensor_names is not a non-empty list of strings"
    for name in ("input_ids", "output_ids"):
        if not _is_id_list(meta[name]):
            return f"{name} is not a list of token ids"
    if len(meta["output_ids"]) != steps:
        return (f"it records {len(meta['output_ids'])} output id{'' if len(meta['output_ids']) == 1 else 's'} "
                f"for {steps} step{'' if steps == 1 else 's'}")
    for name in ("completion", "numpy_version", "npz_sha256"):
        if not isinstance(meta[name], str):
            return f"{name} is {meta[name]!r:.40}, not a string"
    return _key_problem(meta["key"]) or _reference_problem(meta.get("reference"))


def load_capture(json_path: Path, expect: CaptureKey | None = None) -> Capture:
    """Load and verify a capture (JSON + its npz, checksummed). With ``expect``, the capture must
    be of exactly that key (checkpoint, revision, prompt, tokens, NumPy)."""
    json_path = Path(json_path)
    if json_path.suffix == ".npz":
        json_path = json_path.with_suffix(".json")
    try:
        meta = json.loads(json_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CaptureError(f"no capture at {json_path}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _corrupt(json_path, f"unreadable metadata: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != capture_runner.FORMAT:
        raise _corrupt(json_path, f"not a {capture_runner.FORMAT} metadata file")
    required = ("npz_sha256", "steps", "tensor_names", "input_ids", "output_ids", "completion", "numpy_version", "key")
    missing = [k for k in required if k not in meta]
    if missing:
        raise _corrupt(json_path, f"metadata lacks {', '.join(missing)}")
    problem = meta_problem(meta)
    if problem:
        raise _corrupt(json_path, f"malformed metadata: {problem}")
    if expect is not None:
        _check_key(json_path, meta, expect)
    npz_path = json_path.with_suffix(".npz")
    try:
        blob = npz_path.read_bytes()
    except OSError as exc:
        raise _corrupt(json_path, f"cannot read {npz_path.name}: {exc}") from None
    if hashlib.sha256(blob).hexdigest() != meta["npz_sha256"]:
        raise _corrupt(json_path, f"{npz_path.name} does not match the sha256 recorded in its metadata")
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except Exception as exc:
        raise _corrupt(json_path, f"{npz_path.name} is not a readable npz: {exc}") from None
    expected_names = {"input_ids", "output_ids", "margins"} | {
        f"step{s:03d}/{n}" for s in range(int(meta["steps"])) for n in meta["tensor_names"]}
    absent = sorted(expected_names - set(arrays))
    if absent:
        raise _corrupt(json_path, f"{len(absent)} arrays missing, e.g. {absent[0]}")
    if arrays["input_ids"].tolist() != meta["input_ids"] or arrays["output_ids"].tolist() != meta["output_ids"]:
        raise _corrupt(json_path, "token ids in the npz and the metadata disagree")
    return Capture(json_path, meta, arrays)


def _check_key(path: Path, meta: dict, expect: CaptureKey) -> None:
    stored = meta.get("key")
    if not isinstance(stored, dict):
        raise _corrupt(path, "metadata has no capture key")
    if stored.get("checkpoint_sha256") != expect.checkpoint_sha256 or \
            meta.get("checkpoint_sha256") != expect.checkpoint_sha256:
        raise CaptureMismatchError(
            f"capture {path} is of checkpoint {str(meta.get('checkpoint_sha256'))[:16]}…, not the requested "
            f"{expect.checkpoint_sha256[:16]}…; it cannot be compared with this model. Delete it or capture again")
    differing = [k for k, v in asdict(expect).items() if stored.get(k) != v]
    if differing:
        detail = ", ".join(f"{k}: {stored.get(k)!r} != {getattr(expect, k)!r}" for k in differing)
        raise CaptureMismatchError(f"capture {path} was taken for a different key ({detail}); capture again")


# --- taking captures ----------------------------------------------------------------------------


def _say(progress: Progress, message: str) -> None:
    if progress is not None:
        progress(message)


def _check_model_dir(model_dir: Path) -> None:
    for name in ("config.json", "model.safetensors"):
        if not (model_dir / name).is_file():
            raise CaptureError(f"checkpoint {model_dir} has no {name}; create one with `parity synth-model DIR` "
                               "or pass --model DIR")


def capture_key(resolved: ResolvedReference, env: ReferenceEnv, model_dir: Path, prompt: str, tokens: int) -> CaptureKey:
    return CaptureKey(resolved.revision, capture_runner.checkpoint_sha256(model_dir), prompt, int(tokens),
                      env.numpy_version, capture_runner.config_sha256(model_dir), runner_sha256())


def runner_sha256() -> str:
    return hashlib.sha256(RUNNER.read_bytes()).hexdigest()


def runner_command(env: ReferenceEnv, resolved: ResolvedReference, model_dir: Path, prompt: str, tokens: int,
                   out_npz: Path, extra_meta: dict, checks: str = "edges") -> list[str]:
    """The capture runner's command line. Every value is joined to its option with "=", so a
    prompt (or path) starting with "-" is a value, never taken for an option by argparse."""
    options = {"checkout": resolved.checkout_path, "model": model_dir, "prompt": prompt, "tokens": int(tokens),
               "out": out_npz, "extra-meta": json.dumps(extra_meta), "checks": checks}
    return [str(env.python), "-B", "-I", str(RUNNER), *(f"--{name}={value}" for name, value in options.items())]


def run_runner(env: ReferenceEnv, resolved: ResolvedReference, model_dir: Path, prompt: str, tokens: int,
               out_npz: Path, extra_meta: dict, checks: str = "edges") -> None:
    """Run the capture runner with the reference env's Python, isolated from Parity (-I) and
    without writing bytecode into the checkout (-B)."""
    cmd = runner_command(env, resolved, model_dir, prompt, tokens, out_npz, extra_meta, checks)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=CAPTURE_TIMEOUT_S, env=environment)
    except subprocess.TimeoutExpired:
        raise ReferenceRunError(f"the capture runner took over {CAPTURE_TIMEOUT_S}s and was stopped") from None
    if proc.returncode == 0:
        return
    message = (proc.stderr or proc.stdout).strip()[-3000:]
    if proc.returncode == capture_runner.EXIT_BAD_INPUT:
        raise CaptureError(f"the reference rejected the input: {message.removeprefix('capture_runner: ')}")
    raise ReferenceRunError(
        f"the reference failed while capturing (exit {proc.returncode}) in {env.path}:\n{message}\n"
        f"Check the reference checkout {resolved.checkout_path} @ {resolved.revision}")


STALE_TEMPORARY_S = STALE_AFTER_S  # far beyond CAPTURE_TIMEOUT_S: an older temporary has no live writer


def sweep_stale_temporaries(captures_dir: Path, max_age_s: float = STALE_TEMPORARY_S) -> list[Path]:
    """Delete the ``.capture-*`` temporaries a capture runner killed between writing and renaming
    left behind (captures are tens of MB each); recent ones may belong to a running capture and stay."""
    return remove_stale((p for p in Path(captures_dir).glob(".capture-*") if p.is_file()), max_age_s)


def capture(resolved: ResolvedReference, model_dir, prompt: str, tokens: int,
            captures_dir: Path | None = None, progress: Progress = None,
            envs_base: Path | None = None, checks: str = "edges") -> Capture:
    """The reference's capture for (reference, checkpoint, prompt, tokens): reused from
    ``captures_dir`` when a verified one with the same key exists, otherwise taken by the
    capture runner in the reference's own env (built if needed) and written atomically.
    ``checks``: "edges" compares the decomposition with the reference's whole forward functions
    at the first and last step, "all" at every step plus its generate_tokens (slower)."""
    model_dir = Path(model_dir).resolve()
    _check_model_dir(model_dir)
    if int(tokens) < 1:
        raise CaptureError(f"tokens must be at least 1, got {tokens}")
    env = ensure_env(resolved.checkout_path, progress=progress, base=envs_base)
    key = capture_key(resolved, env, model_dir, prompt, tokens)
    npz_path, json_path = capture_paths(key, captures_dir)
    try:
        npz_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a path problem, not the reference's: say so before running it
        raise CaptureError(f"cannot create the captures directory {npz_path.parent} ({exc}); "
                           "pass --captures-dir DIR in a place you can write") from None
    for leftover in sweep_stale_temporaries(npz_path.parent):
        _say(progress, f"removed {leftover.name}, left by a capture that was killed midway")
    with _key_lock(npz_path.parent / f".lock-{key.file_stem()}", progress):  # not swept as a temporary
        return _capture_locked(resolved, env, key, npz_path, json_path, model_dir, prompt, tokens, checks, progress)


@contextlib.contextmanager
def _key_lock(path: Path, progress: Progress):
    """One capture per key at a time: a second process with the same key waits, then reuses what the
    first wrote, instead of seeing its half-written files (npz before JSON) as unusable and
    deleting them. An advisory lock, released by the kernel if its holder dies."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _say(progress, "waiting for another process taking the same capture")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _capture_locked(resolved, env, key, npz_path: Path, json_path: Path, model_dir: Path, prompt: str, tokens: int,
                    checks: str, progress: Progress) -> Capture:
    if json_path.exists() or npz_path.exists():
        try:
            cap = load_capture(json_path, expect=key)
            _say(progress, f"reusing capture {json_path}")
            return cap
        except CaptureError as exc:
            _say(progress, f"discarding unusable capture: {exc}")
            for path in (json_path, npz_path):  # the JSON first: without it nothing is loadable
                path.unlink(missing_ok=True)
    _say(progress, f"capturing {tokens} step{'' if tokens == 1 else 's'} with the reference ({resolved.kind} @ {resolved.revision[:12]}, "
                   f"NumPy {env.numpy_version}) -> {json_path}")
    extra = {"key": asdict(key), "reference": resolved.report(env.numpy_version),
             "reference_env": {"path": str(env.path), "python_version": env.python_version,
                               "installer": env.installer, "key": env.key},
             "checkout": str(resolved.checkout_path), "model_dir": str(model_dir),
             "banner": resolved.banner}
    run_runner(env, resolved, model_dir, prompt, tokens, npz_path, extra, checks)
    return load_capture(json_path, expect=key)
