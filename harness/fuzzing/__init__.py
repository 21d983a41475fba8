"""Differential fuzzing of the compiler against NumPy, driven by the op registry
(``compiler.opinfo``): op-level cases and random whole programs (graphs) are built,
run compiled and in NumPy, compared NaN-aware with exact dtypes, shrunk by
Hypothesis when they disagree, and kept as JSON reproducers in a corpus that the
normal test suite replays. Cases run in a worker process so that a crash in native
code is a finding, not a dead fuzzer."""
