"""The pinned NumPy reference GPT-2: the pin itself, a gitpython checkout of it,
its own isolated Python environment built from its lock file, and the capture
runner that executes inside that environment. Nothing here imports the compiler."""
