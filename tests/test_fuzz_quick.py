"""The quick fuzzing profile inside the test suite (about a minute): every registry
op with a few Hypothesis examples, then random programs; any failure fails the test
with its shrunk reproducer (written to a temporary corpus, not the repository)."""

from __future__ import annotations

import json

import pytest

from compiler import opinfo as oi
from harness.fuzzing.engine import PROFILES, fuzz


@pytest.mark.xdist_group("fuzz-quick")
def test_quick_profile_finds_no_failures(tmp_path):
    summary = fuzz(PROFILES["quick"], base_seed=0, corpus=tmp_path)
    report = "\n".join(f"{f.op_or_graph}: {f.message}\n  reproducer: {f.reproducer}\n  "
                       f"{json.dumps(f.case)[:2000]}" for f in summary.failures)
    assert not summary.failures, report
    assert summary.graph_examples >= 5
    assert summary.examples >= len(oi.REGISTRY)
    assert sorted(summary.ops_covered) == sorted(oi.REGISTRY), "the budget ran out before every op was fuzzed"
