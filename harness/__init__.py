"""The differential-verification harness: runs the pinned reference (through
``reference_env``) and every compiler mode (through ``compiler``'s public API),
compares what they compute step by step, and renders the verdict as terminal,
JSON, JUnit and HTML reports. It also hosts the ``parity`` command line."""
