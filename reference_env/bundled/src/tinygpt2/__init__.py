"""A small NumPy GPT-2: parameter dataclasses, the ops, two forward passes and GPT-2's BPE encoder."""
