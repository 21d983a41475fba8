"""The quick fuzzing profile inside the test suite (about a minute): every registry
op with a few Hypothesis examples, then random programs; any failure fails the test
with its shrunk reproducer (written to a temporary corpus, not the repository). The
profile's wall-clock budget is lifted here: a test is driven by its example counts, so a
loaded machine makes it slower, never a failure."""

from __future__ import annotations

import dataclasses
import json

import pytest

from compiler import opinfo as oi
from harness.fuzzing.engine import PROFILES, fuzz


@pytest.mark.xdist_group("fuzz-quick")
def test_quick_profile_finds_no_failures(tmp_path):
    profile = dataclasses.replace(PROFILES["quick"], seconds=3600)  # counts, not the clock, bound the test
    summary = fuzz(profile, base_seed=0, corpus=tmp_path)
    report = "\n".join(f"{f.op_or_graph}: {f.message}\n  reproducer: {f.reproducer}\n  "
                       f"{json.dumps(f.case)[:2000]}" for f in summary.failures)
    assert not summary.failures, report
    assert summary.graph_examples == profile.graph_examples
    assert summary.examples >= len(oi.REGISTRY)
    assert not summary.stopped_by_time
    assert sorted(summary.ops_covered) == sorted(oi.REGISTRY)
