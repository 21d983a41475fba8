"""Replays every shrunk fuzzer finding kept in tests/fuzz_corpus/: each was a compiler
bug (now fixed), so each must now agree with NumPy. Cases run crash-isolated, as the
fuzzer ran them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.fuzzing.engine import corpus_files
from harness.fuzzing.isolate import IsolatedRunner

CORPUS = Path(__file__).parent / "fuzz_corpus"
ENTRIES = corpus_files(CORPUS)  # not the dot-named temporaries a killed fuzzer run may have left


@pytest.fixture(scope="module")
def runner():
    with IsolatedRunner(timeout=300) as r:
        yield r


def test_corpus_is_not_empty():
    assert ENTRIES, f"no reproducers in {CORPUS}"


@pytest.mark.parametrize("path", ENTRIES, ids=[p.stem for p in ENTRIES])
def test_corpus_entry_agrees_with_numpy(path, runner):
    entry = json.loads(path.read_text())
    assert {"kind", "op_or_graph", "message", "case"} <= set(entry), f"{path.name}: malformed corpus entry"
    outcome = runner.run(entry["case"])
    assert not outcome.failed, f"{path.name} ({entry['op_or_graph']}) fails again: [{outcome.status}] {outcome.message}"
