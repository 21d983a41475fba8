"""The fuzzing loop: Hypothesis generates op-level cases (one search per registry
op) and whole programs, every case runs isolated, and a disagreement is shrunk by
Hypothesis to a minimal case that is written to the corpus as a reproducible JSON
file (atomically; dot-named temporaries are never read as entries, and those of a run
killed midway are swept once an hour old). Budgets are examples per op, graph examples
and wall-clock seconds; shrinking has its own time cap so one finding cannot eat the run.
A corpus file that is not a replayable entry is a ``CorpusError`` naming the file."""

from __future__ import annotations

import json
import tempfile
import time
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import FlakyFailure

from compiler import opinfo as oi
from compiler.paths import STALE_AFTER_S, remove_stale
from harness.report import atomic_write_text

from .cases import case_id, describe_case, sample_op_case
from .graphs import sample_graph_case
from .isolate import IsolatedRunner, Outcome


@dataclass(frozen=True)
class Profile:
    examples_per_op: int
    graph_examples: int
    seconds: float
    shrink_seconds: float
    max_nodes: int = 30


PROFILES = {
    "quick": Profile(examples_per_op=3, graph_examples=20, seconds=75, shrink_seconds=15, max_nodes=20),
    "long": Profile(examples_per_op=150, graph_examples=1500, seconds=3600, shrink_seconds=180, max_nodes=30),
}


@dataclass
class Finding:
    op_or_graph: str
    reproducer: str          # corpus file (or the case JSON when no corpus is written)
    message: str
    status: str
    case: dict = field(repr=False, default_factory=dict)

    def as_json(self) -> dict:
        return {"op_or_graph": self.op_or_graph, "reproducer": self.reproducer, "message": self.message}


@dataclass
class Summary:
    ops_covered: list = field(default_factory=list)
    examples: int = 0
    graph_examples: int = 0
    failures: list = field(default_factory=list)
    seconds: float = 0.0
    stopped_by_time: bool = False

    def as_json(self) -> dict:
        return {"ops_covered": len(self.ops_covered), "examples": self.examples, "graph_examples": self.graph_examples,
                "failures": [f.as_json() for f in self.failures]}


class _Chooser:
    """``opinfo.Chooser`` over Hypothesis draws, so every choice shrinks."""

    def __init__(self, draw):
        self.draw = draw

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def integer(self, lo, hi):
        return self.draw(st.integers(lo, hi))


@st.composite
def op_cases(draw, info: oi.OpInfo):
    return sample_op_case(_Chooser(draw), info)


@st.composite
def graph_cases(draw, max_nodes: int = 30):
    return sample_graph_case(_Chooser(draw), 2, max_nodes)


MAX_GRAPH_FINDINGS = 3   # the same bug tends to show up in many programs; a few reproducers suffice


class _Failed(AssertionError):
    pass


def search(strategy, max_examples: int, run_seed: int, runner: IsolatedRunner, deadline: float,
           shrink_seconds: float) -> tuple[int, dict | None, Outcome | None]:
    """One Hypothesis search; returns (cases run, minimal failing case, its outcome)."""
    state = {"runs": 0, "last": None, "first_failure": None, "failed": {}}

    def body(case):
        key = case_id(case)
        if state["first_failure"] is not None and time.monotonic() - state["first_failure"] > shrink_seconds:
            # out of shrinking time: the cases seen failing still fail (Hypothesis replays the smallest of them,
            # which need not be the last one seen), the others pass without running
            outcome = state["failed"].get(key)
            if outcome is None:
                return
        elif state["first_failure"] is None and time.monotonic() > deadline:
            return
        else:
            outcome = runner.run(case)
            state["runs"] += 1
        if outcome.failed:
            if state["first_failure"] is None:
                state["first_failure"] = time.monotonic()
            state["failed"][key] = outcome
            state["last"] = (case, outcome)
            raise _Failed(outcome.message)  # (one place: Hypothesis tells failures apart by where they are raised)

    test = given(strategy)(body)
    test = settings(max_examples=max_examples, deadline=None, database=None, derandomize=False,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    phases=[Phase.generate, Phase.shrink], print_blob=False)(test)
    test = seed(run_seed)(test)
    try:
        test()
    except _Failed:
        case, outcome = state["last"]
        return state["runs"], case, outcome
    except FlakyFailure:  # a case that failed, then passed when run again: the compiler's answer is not stable
        case, outcome = state["last"]
        return state["runs"], case, dataclasses.replace(
            outcome, message=f"{outcome.message} (then passed when run again: flaky)")
    return state["runs"], None, None


class CorpusError(ValueError):
    """A corpus file that cannot be replayed (unreadable, not an entry, or naming an op the registry lacks): the run
    could not happen, which is not a compiler failure."""


CORPUS_TEMPORARY_STALE_S = STALE_AFTER_S


def is_corpus_temporary(path: Path) -> bool:
    """Dotfiles are temporaries: atomic_write_text's ``.NAME.XXXX.tmp`` and the ``.tmp-XXXX.json`` of older runs
    (whose ``.json`` suffix a plain ``*.json`` glob matches)."""
    return path.name.startswith(".")


def corpus_files(corpus: Path) -> list[Path]:
    """The entries of a corpus directory, in name order, without temporaries a killed writer left."""
    return sorted(p for p in Path(corpus).glob("*.json") if not is_corpus_temporary(p))


def sweep_stale_corpus_temporaries(corpus: Path, max_age_s: float = CORPUS_TEMPORARY_STALE_S) -> list[Path]:
    """Delete temporaries older than ``max_age_s`` (a writer killed before its rename); recent ones may be live."""
    return remove_stale((p for p in Path(corpus).glob(".*") if p.is_file()), max_age_s)


def _case_ops(case: dict) -> list:
    if case.get("kind") == "op":
        return [case.get("op")]
    if case.get("kind") == "graph":
        nodes = case.get("nodes")
        if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
            return [None]
        return [n.get("op") for n in nodes]
    return []  # other kinds (the crash self-test) name no registry op


def check_corpus_entry(path: Path, entry) -> dict:
    """``entry`` when it is a replayable corpus entry, else a ``CorpusError`` naming ``path`` and what is wrong."""
    if not isinstance(entry, dict):
        raise CorpusError(f"{path}: not a corpus entry (a JSON object with a 'case'), got a JSON {type(entry).__name__}")
    case = entry.get("case")
    if not isinstance(case, dict) or not isinstance(case.get("kind"), str):
        raise CorpusError(f"{path}: not a corpus entry: no 'case' object with a 'kind'")
    for op in _case_ops(case):
        if not isinstance(op, str) or op not in oi.REGISTRY:
            raise CorpusError(f"{path}: corpus entry names unknown op {op!r}; see `parity fuzz --list-ops`")
    return entry


def read_corpus_entry(path: Path) -> dict:
    """One corpus file, checked; a truncated or garbage file is a ``CorpusError`` naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CorpusError(f"{path}: cannot read the corpus file ({err})") from None
    try:
        entry = json.loads(text)
    except json.JSONDecodeError as err:
        raise CorpusError(f"{path}: not valid JSON ({err}); truncated or not a corpus file") from None
    return check_corpus_entry(path, entry)


def write_corpus_entry(corpus: Path, finding_case: dict, label: str, outcome: Outcome, origin: str) -> Path:
    name = f"{finding_case['kind']}-{label.replace('.', '_')}-{case_id(finding_case)}.json"
    entry = {"kind": finding_case["kind"], "op_or_graph": label, "status": outcome.status, "message": outcome.message,
             "origin": origin, "description": describe_case(finding_case), "case": finding_case}
    # atomic (a dot-named temporary renamed into place) and with the umask's permissions, like reports
    return atomic_write_text(Path(corpus) / name, json.dumps(entry, indent=1, sort_keys=True) + "\n")


def fuzz(profile: Profile, base_seed: int = 0, corpus: Path | None = None, ops: list[str] | None = None,
         progress=None, runner: IsolatedRunner | None = None) -> Summary:
    """Run the op-level then the graph-level fuzzer within ``profile``'s budgets."""
    started = time.monotonic()
    deadline = started + profile.seconds
    summary = Summary()
    infos = [oi.REGISTRY[n] for n in ops] if ops else list(oi.REGISTRY.values())
    if corpus is not None and Path(corpus).is_dir():
        sweep_stale_corpus_temporaries(corpus)
    own_runner = runner is None
    cache = tempfile.TemporaryDirectory(prefix="parity-fuzz-cache-") if own_runner else None
    runner = runner or IsolatedRunner(cache_dir=cache.name)
    # graphs get their share of the time even when op fuzzing could use it all
    op_deadline = started + profile.seconds * (0.6 if profile.graph_examples else 1.0)
    try:
        failed_ops = set()
        rounds = max(1, -(-profile.examples_per_op // 10))
        per_round = -(-profile.examples_per_op // rounds)
        for r in range(rounds):
            for i, info in enumerate(infos):
                if info.name in failed_ops or time.monotonic() > op_deadline:
                    continue
                n = min(per_round, profile.examples_per_op - r * per_round)
                if n <= 0:
                    continue
                runs, case, outcome = search(op_cases(info), n, base_seed * 100003 + r * 1009 + i, runner,
                                             op_deadline, profile.shrink_seconds)
                summary.examples += runs
                if runs and info.name not in summary.ops_covered:
                    summary.ops_covered.append(info.name)
                if case is not None:
                    failed_ops.add(info.name)
                    summary.failures.append(_finding(case, info.name, outcome, corpus, base_seed, runner))
                if progress:
                    progress(summary)
        remaining = profile.graph_examples
        g = graph_failures = 0
        while remaining > 0 and time.monotonic() < deadline:
            n = min(remaining, 25)
            runs, case, outcome = search(graph_cases(profile.max_nodes), n, base_seed * 100003 + 7919 + g, runner,
                                         deadline, profile.shrink_seconds)
            summary.graph_examples += runs
            remaining -= n
            g += 1
            if case is not None:
                summary.failures.append(_finding(case, "graph", outcome, corpus, base_seed, runner))
                graph_failures += 1
            if progress:
                progress(summary)
            if runs < n or graph_failures >= MAX_GRAPH_FINDINGS:
                break
    finally:
        if own_runner:
            runner.close()
            cache.cleanup()
    summary.seconds = time.monotonic() - started
    summary.stopped_by_time = time.monotonic() > deadline
    return summary


def _finding(case, label, outcome, corpus, base_seed, runner=None) -> Finding:
    if outcome.status == "fail" and hasattr(runner, "explain"):
        # once per finding, on the shrunk case: which pipeline step makes the values wrong
        introduced = runner.explain(case)
        if introduced:
            outcome = Outcome(outcome.status, f"{outcome.message} — introduced by: {introduced}")
    if corpus is not None:
        path = write_corpus_entry(corpus, case, label, outcome, f"parity fuzz --seed {base_seed}")
        reproducer = str(path)
    else:
        reproducer = json.dumps(case, sort_keys=True)
    return Finding(label, reproducer, f"[{outcome.status}] {outcome.message}", outcome.status, case)


def load_corpus(corpus: Path) -> list[tuple[Path, dict]]:
    """Every entry of a corpus directory, each checked (``CorpusError`` names the first bad file)."""
    return [(path, read_corpus_entry(path)) for path in corpus_files(corpus)]
