"""NumPy's order for float sums, which the CPU lowering repeats so that its sums are NumPy's bit for bit.

NumPy adds the elements of its innermost loop pairwise when that loop runs along a reduced axis:
fewer than 8 elements in order; up to 128 in 8 interleaved lanes combined as a fixed tree, the
remainder added after; more are split in two (the first half a multiple of 8) and each half summed
so. The sum is then added to the output, which starts at 0.0, and when other reduced axes are left
outside that loop, each further row's pairwise sum is added in turn; a row NumPy cannot step through
with one stride goes through its buffer a bufferful at a time. This module decides, from the operand's
shape and reduced axes in memory order (which ``layout`` works out, with how far one stride reaches),
which reductions run that way, and gives the tree; ``lowering`` emits it."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

LANES = 8           # NumPy unrolls its pairwise loop 8 ways
LEAF_LIMIT = 128    # PW_BLOCKSIZE: longer runs are split in two
# a tree of up to this many leaves (rows up to 65,536 elements) is unrolled into one generic (each
# leaf an element read and an addition); a larger one is evaluated level by level (``nodes_at``)
UNROLLED_LEAVES = 1024
# longer rows keep the plain loop: a tree's tables (two numbers per leaf, passed to the kernel) are
# built in Python at compile time, seconds for a row this long (a gigabyte of float32)
MAX_ROW = 1 << 28
# NumPy copies a row it cannot step through with one stride (a slice's rows, say) into a buffer of
# this many elements, whole runs at a time (see ``buffer_chunk``)
BUFFER = 8192
UNEVEN = 0  # see ``buffer_chunk``


@dataclass(frozen=True)
class Leaf:
    """Elements [offset, offset + length) of a row, summed without splitting."""
    offset: int
    length: int


def tree(offset: int, length: int):
    """The pairwise tree of ``length`` elements from ``offset``: a Leaf, or a (left, right) pair."""
    if length <= LEAF_LIMIT:
        return Leaf(offset, length)
    half = length // 2
    half -= half % LANES
    return (tree(offset, half), tree(offset + half, length - half))


def leaves(node) -> list[Leaf]:
    """The tree's leaves, left to right."""
    if isinstance(node, Leaf):
        return [node]
    return leaves(node[0]) + leaves(node[1])


def min_leaf_depth(node, depth: int = 0) -> int:
    """The depth of the shallowest leaf (NumPy's trees have every leaf at that depth or one below)."""
    if isinstance(node, Leaf):
        return depth
    return min(min_leaf_depth(node[0], depth + 1), min_leaf_depth(node[1], depth + 1))


def nodes_at(node, depth: int) -> list:
    """The tree's nodes at ``depth``, left to right (every node above it must be a pair)."""
    if depth == 0:
        return [node]
    return nodes_at(node[0], depth - 1) + nodes_at(node[1], depth - 1)


@dataclass(frozen=True)
class SumPlan:
    """How NumPy sums a C-contiguous operand: axes ``row_from`` onwards form one row of ``row``
    elements (reduced axes, and unit axes between them) summed pairwise; the reduced axes before
    it, ``outer_reduced`` (unit ones aside), then add those row sums one by one in index order."""
    row_from: int
    row: int
    outer_reduced: tuple[int, ...]


def numpy_sum_plan(shape: tuple, axes: tuple) -> SumPlan | None:
    """The plan for summing ``shape`` over ``axes`` as NumPy does, or None where NumPy's inner loop
    does not run along a reduced axis (it adds whole slices in order then, as a plain loop does) or
    where nothing is summed. NumPy's iterator drops unit axes and merges the trailing reduced ones,
    so they count as one row (``buffer_chunk`` says how much of it NumPy sums at a time)."""
    if not axes or 0 in shape:
        return None
    sized = [d for d, n in enumerate(shape) if n != 1]
    if not sized or sized[-1] not in axes:
        return None
    row_from = sized[-1]
    for d in reversed(sized[:-1]):
        if d not in axes:
            break
        row_from = d
    return SumPlan(row_from, prod(shape[row_from:]), tuple(a for a in axes if a < row_from and shape[a] != 1))


def adds_in_order(shape: tuple, axes: tuple) -> bool:
    """Whether NumPy sums ``shape`` over ``axes`` by adding whole slices in index order: its inner
    loop runs along a kept axis, so each output element gains one element per step."""
    sized = [d for d, n in enumerate(shape) if n != 1]
    return bool(axes) and 0 not in shape and bool(sized) and sized[-1] not in axes


def buffer_chunk(row: int, run: int, cast: bool = False) -> int | None:
    """How many elements of a row NumPy sums pairwise at a time when only ``run`` of them lie evenly
    spaced (``layout.inner_run``): None where that is the whole row (the row is one run, or fits NumPy's
    buffer, which it is copied into); otherwise as many whole runs as the buffer holds (at least one),
    each bufferful summed pairwise and added to the output in order. A reduction that casts (np.sum's
    dtype=, np.mean of float16) reads everything through the buffer, so it also cuts a run longer than
    the buffer into bufferfuls, each run's last one shorter: UNEVEN where that gives bufferfuls of
    more than one length within the row."""
    if cast and run > BUFFER:
        return UNEVEN if run % BUFFER and run < row else BUFFER
    if run >= row:
        return None
    chunk = max(BUFFER // run, 1) * run
    return None if chunk >= row else chunk


def emitted(plan: SumPlan, chunk: int | None) -> bool:
    """Whether the lowering repeats NumPy's order for ``plan`` summed ``chunk`` elements at a time: its
    trees (a row, or a bufferful) have at most MAX_ROW elements, and no last, shorter bufferful of a row
    falls between other rows' bufferfuls (reduced axes before the row)."""
    if chunk is None:
        return plan.row <= MAX_ROW
    return chunk != UNEVEN and chunk <= MAX_ROW and not (plan.row % chunk and plan.outer_reduced)
