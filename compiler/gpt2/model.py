"""GPT-2 on the compiler, two ways. Subgraph mode compiles the embedding, each
block's attention and feed-forward sublayers (weights as runtime inputs, one
specialization per shape/dtype shared by all blocks) and the final projection.
Fused mode traces the whole forward pass, written as one plain NumPy function,
into a single module. Both pad the sequence to the next power of two (the causal
mask keeps real rows from seeing padding) so decoding compiles a handful of
kernels, and both compute exactly the reference's dtypes: float32 until the first
attention scores are scaled by a float64 NumPy scalar, float64 from then on. On the
GPU target the weights are copied to device memory once and stay there. Both re-run
their graphs op by op to localize a divergence; fused mode marks, while tracing,
where each sublayer starts, so an op of the one fused graph is named with its block."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from compiler.graph import machinery
from compiler.ops import causal_mask, feedforward, layer_norm, linear, softmax
from compiler.gpt2.checkpoint import BlockParams, GPT2Model, GPT2Params, LayerNormParams, LinearParams

MODES = ("subgraph", "fused")
MIN_PADDED_LENGTH = 8


# --------------------------------------------------------------------------- the model as NumPy formulas
# These functions are plain NumPy: they run on arrays and trace on compiler tensors alike.


def embedding(wte, wpe, ids):
    """Token plus position embedding of ``ids`` (T,)."""
    return wte[ids] + wpe[: ids.shape[0]]


def multi_head_attention(x, c_attn_w, c_attn_b, c_proj_w, c_proj_b, n_head: int):
    """Heads by split, as the reference's ``mha`` does; the mask is the reference's ``-1e10`` form."""
    qkv = linear(x, c_attn_w, c_attn_b)
    q, k, v = np.split(qkv, 3, axis=-1)
    heads = zip(np.split(q, n_head, axis=-1), np.split(k, n_head, axis=-1), np.split(v, n_head, axis=-1))
    mask = causal_mask(x.shape[0], x.dtype)
    out = [softmax(qh @ kh.T / np.sqrt(qh.shape[-1]) + mask) @ vh for qh, kh, vh in heads]
    return linear(np.hstack(out), c_proj_w, c_proj_b)


def attention_sublayer(x, ln_g, ln_b, c_attn_w, c_attn_b, c_proj_w, c_proj_b, n_head: int):
    """``x + attention(layer_norm(x))``."""
    return x + multi_head_attention(layer_norm(x, ln_g, ln_b), c_attn_w, c_attn_b, c_proj_w, c_proj_b, n_head=n_head)


def feedforward_sublayer(x, ln_g, ln_b, c_fc_w, c_fc_b, c_proj_w, c_proj_b):
    """``x + feedforward(layer_norm(x))``."""
    return x + feedforward(layer_norm(x, ln_g, ln_b), c_fc_w, c_fc_b, c_proj_w, c_proj_b)


def final_projection(x, last, ln_g, ln_b, wte):
    """Logits of the rows ``last`` (the last real row): ``layer_norm(x[last]) @ wte.T``."""
    return layer_norm(x[last], ln_g, ln_b) @ wte.T


def gpt2_fused(ids, last, params: GPT2Params, wte_out, n_head: int):
    """The whole forward pass as one NumPy function (heads by reshape/transpose, ``-inf``
    causal mask), returning the logits of row ``last``. ``wte_out`` is the output
    projection: ``params.wte`` itself, or its exact float64 copy."""
    T = ids.shape[0]
    x = params.wte[ids] + params.wpe[:T]
    mask = np.triu(np.ones((T, T), dtype=np.float32) * -np.inf, k=1)
    for block in params.blocks:
        h = layer_norm(x, block.ln_1.g, block.ln_1.b)
        qkv = h @ block.attn_c_attn.w + block.attn_c_attn.b
        q, k, v = np.split(qkv, 3, axis=-1)
        d = q.shape[-1] // n_head
        q = q.reshape(T, n_head, d).transpose(1, 0, 2)
        k = k.reshape(T, n_head, d).transpose(1, 0, 2)
        v = v.reshape(T, n_head, d).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(d) + mask
        heads = softmax(scores) @ v
        merged = heads.transpose(1, 0, 2).reshape(T, n_head * d)
        x = x + (merged @ block.attn_c_proj.w + block.attn_c_proj.b)
        h = layer_norm(x, block.ln_2.g, block.ln_2.b)
        x = x + feedforward(h, block.mlp_c_fc.w, block.mlp_c_fc.b, block.mlp_c_proj.w, block.mlp_c_proj.b)
    return layer_norm(x[last], params.ln_f.g, params.ln_f.b) @ wte_out.T


def numpy_forward(model: GPT2Model, ids) -> np.ndarray:
    """The NumPy reference forward (the formulas above, unpadded, on NumPy): last-row logits."""
    ids = np.asarray(ids, dtype=np.int64)
    p, n_head = model.params, model.config.n_head
    x = embedding(p.wte, p.wpe, ids)
    for b in p.blocks:
        x = attention_sublayer(x, b.ln_1.g, b.ln_1.b, b.attn_c_attn.w, b.attn_c_attn.b, b.attn_c_proj.w, b.attn_c_proj.b, n_head)
        x = feedforward_sublayer(x, b.ln_2.g, b.ln_2.b, b.mlp_c_fc.w, b.mlp_c_fc.b, b.mlp_c_proj.w, b.mlp_c_proj.b)
    return final_projection(x, np.array([ids.shape[0] - 1]), p.ln_f.g, p.ln_f.b, p.wte)[0]


# --------------------------------------------------------------------------- weights, converted once
# Weights that only ever meet float64 activations are converted to float64 once per model:
# the conversion is exact, so every product is the one NumPy computes after promoting.


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def _block64(b: BlockParams, keep_input_side_f32: bool) -> BlockParams:
    ln_1 = b.ln_1 if keep_input_side_f32 else LayerNormParams(_f64(b.ln_1.g), _f64(b.ln_1.b))
    c_attn = b.attn_c_attn if keep_input_side_f32 else LinearParams(_f64(b.attn_c_attn.w), _f64(b.attn_c_attn.b))
    return BlockParams(
        ln_1=ln_1, attn_c_attn=c_attn,
        attn_c_proj=LinearParams(_f64(b.attn_c_proj.w), _f64(b.attn_c_proj.b)),
        ln_2=LayerNormParams(_f64(b.ln_2.g), _f64(b.ln_2.b)),
        mlp_c_fc=LinearParams(_f64(b.mlp_c_fc.w), _f64(b.mlp_c_fc.b)),
        mlp_c_proj=LinearParams(_f64(b.mlp_c_proj.w), _f64(b.mlp_c_proj.b)),
    )


def prepared_params(params: GPT2Params) -> tuple[GPT2Params, np.ndarray]:
    """(params with float64 copies where the activations are float64, float64 output projection)."""
    blocks = [_block64(b, keep_input_side_f32=(i == 0)) for i, b in enumerate(params.blocks)]
    return GPT2Params(params.wte, params.wpe, blocks, LayerNormParams(_f64(params.ln_f.g), _f64(params.ln_f.b))), _f64(params.wte)


def padded_length(n: int, n_ctx: int) -> int:
    return min(max(MIN_PADDED_LENGTH, 1 << (n - 1).bit_length()), n_ctx)


# --------------------------------------------------------------------------- compiled runners


class CompiledGPT2:
    mode = "abstract"

    def __init__(self, model: GPT2Model, target: str = "cpu"):
        from compiler import jit  # noqa: F401  (import here keeps checkpoint loading light)
        self.model = model
        self.config = model.config
        self.target = target
        self.params, self.wte_out = prepared_params(model.params)
        self._on_device = None  # (params, wte_out) in GPU memory, uploaded at the first GPU forward

    def weights(self) -> tuple:
        """(params, wte_out) as the kernels take them: on the GPU target, copies in device memory
        made once, so no call uploads the weights again (placeholders while building only)."""
        if self.target != "gpu":
            return self.params, self.wte_out
        from compiler.gpu_memory import tree_to_device
        from compiler.jit import building
        if building():
            return tree_to_device((self.params, self.wte_out))
        if self._on_device is None:
            self._on_device = tree_to_device((self.params, self.wte_out))
        return self._on_device

    # -- validation shared by every entry point
    def check_ids(self, ids, n_new: int = 0) -> np.ndarray:
        arr = np.asarray(ids)
        if arr.ndim != 1:
            raise ValueError(f"token ids must be a 1-d sequence, got shape {arr.shape}")
        if arr.size == 0:
            raise ValueError("the prompt is empty: at least one token is needed")
        if arr.dtype.kind not in "iu":
            raise ValueError(f"token ids must be integers, got {arr.dtype}")
        bad = (arr < 0) | (arr >= self.config.vocab_size)
        if bad.any():
            raise ValueError(f"token id {int(arr[bad][0])} is outside the vocabulary (0..{self.config.vocab_size - 1})")
        if n_new < 0:
            raise ValueError(f"the number of tokens to generate must be >= 0, got {n_new}")
        # the last new token is returned, never fed back, so it needs no position
        positions = arr.size + max(n_new - 1, 0)
        if positions > self.config.n_ctx:
            raise ValueError(
                f"prompt ({arr.size} token{'' if arr.size == 1 else 's'}) + {n_new} new token{'' if n_new == 1 else 's'} "
                f"needs {arr.size} + {n_new} - 1 = {positions} "
                f"positions (the last new token is not fed back), which exceeds the context length {self.config.n_ctx}")
        return arr.astype(np.int64)

    def _padded(self, ids: np.ndarray) -> np.ndarray:
        padded = np.zeros(padded_length(ids.size, self.config.n_ctx), dtype=np.int64)
        padded[: ids.size] = ids
        return padded

    def forward(self, ids, trace: dict | None = None) -> np.ndarray:
        raise NotImplementedError

    def generate(self, ids, n_tokens: int, progress=None) -> list[int]:
        """Greedy decoding: always exactly ``n_tokens`` new ids (no early stop at end-of-text)."""
        seq = list(self.check_ids(ids, n_tokens))
        out = []
        for _ in range(n_tokens):
            logits = self.forward(seq)
            token = int(np.argmax(logits))
            out.append(token)
            seq.append(token)
            if progress is not None:
                progress()
        return out


def _rows(x, n: int) -> np.ndarray:
    """The first ``n`` rows of an activation, as a NumPy copy (from device memory on the GPU)."""
    host = x.to_host() if hasattr(x, "to_host") else x
    return host[:n].copy()


class SubgraphGPT2(CompiledGPT2):
    """One compiled function per sublayer; the residual stream crosses the boundary between them
    (in GPU memory on the GPU target)."""

    mode = "subgraph"

    def __init__(self, model: GPT2Model, target: str = "cpu"):
        super().__init__(model, target)
        from compiler import jit
        # on the GPU the residual stream stays in device memory from sublayer to sublayer; only
        # the logits (and what a trace asks for) come back
        resident = target == "gpu"
        self.embed_fn = jit(embedding, target=target, device_outputs=resident)
        self.attention_fn = jit(attention_sublayer, target=target, device_outputs=resident)
        self.feedforward_fn = jit(feedforward_sublayer, target=target, device_outputs=resident)
        self.projection_fn = jit(final_projection, target=target)

    @staticmethod
    def _attention_args(params, i):
        b = params.blocks[i]
        return (b.ln_1.g, b.ln_1.b, b.attn_c_attn.w, b.attn_c_attn.b, b.attn_c_proj.w, b.attn_c_proj.b)

    @staticmethod
    def _feedforward_args(params, i):
        b = params.blocks[i]
        return (b.ln_2.g, b.ln_2.b, b.mlp_c_fc.w, b.mlp_c_fc.b, b.mlp_c_proj.w, b.mlp_c_proj.b)

    def forward(self, ids, trace: dict | None = None) -> np.ndarray:
        ids = self.check_ids(ids)
        n = ids.size
        padded = self._padded(ids)
        params, wte_out = self.weights()
        x = self.embed_fn(params.wte, params.wpe, padded)
        if trace is not None:
            trace["embedding"] = _rows(x, n)
        for i in range(self.config.n_layer):
            x = self.attention_fn(x, *self._attention_args(params, i), n_head=self.config.n_head)
            if trace is not None:
                trace[f"h.{i}.attention"] = _rows(x, n)
            x = self.feedforward_fn(x, *self._feedforward_args(params, i))
            if trace is not None:
                trace[f"h.{i}.output"] = _rows(x, n)
        logits = self.projection_fn(x, np.array([n - 1]), params.ln_f.g, params.ln_f.b, wte_out)[0]
        if trace is not None:
            trace["logits"] = logits
        return logits

    def sublayer_call(self, tensor_name: str, ids, upstream):
        """(function, args, static kwargs) of the sublayer that produces ``tensor_name``, at the
        padded length the forward pass runs it at (the reference's rows, then zero rows): a
        miscompile that depends on the shape (a square operand, a BLAS or tiling path taken by
        size) must show in the re-run as it did in the forward."""
        ids = self.check_ids(ids)
        if tensor_name == "embedding":
            return embedding, (self.params.wte, self.params.wpe, self._padded(ids)), {}
        if upstream is not None:
            upstream = np.asarray(upstream)
            rows = np.zeros((padded_length(ids.size, self.config.n_ctx),) + upstream.shape[1:], upstream.dtype)
            rows[: upstream.shape[0]] = upstream
            upstream = rows
        if tensor_name == "logits":
            return final_projection, (upstream, np.array([ids.size - 1]), self.params.ln_f.g, self.params.ln_f.b, self.wte_out), {}
        parts = tensor_name.split(".")
        if len(parts) != 3 or parts[0] != "h" or not parts[1].isdigit() or int(parts[1]) >= self.config.n_layer:
            raise ValueError(f"unknown tensor name {tensor_name!r}")
        i = int(parts[1])
        if parts[2] == "attention":
            return attention_sublayer, (upstream, *self._attention_args(self.params, i)), {"n_head": self.config.n_head}
        if parts[2] == "output":
            return feedforward_sublayer, (upstream, *self._feedforward_args(self.params, i)), {}
        raise ValueError(f"unknown tensor name {tensor_name!r}")

    def rerun(self, tensor_name: str, ids, upstream_value) -> np.ndarray:
        """The sublayer producing ``tensor_name`` run as the forward pass runs it (its own kernel, at
        the padded length) on ``upstream_value``; its real rows, or the logits row. Tells a divergence
        the sublayer makes from the reference's own input apart from one it inherits upstream."""
        fn, args, static = self.sublayer_call(tensor_name, ids, upstream_value)
        compiled = {embedding: self.embed_fn, attention_sublayer: self.attention_fn,
                    feedforward_sublayer: self.feedforward_fn, final_projection: self.projection_fn}[fn]
        return self._real_part(fn, compiled(*args, **static), ids)

    def _real_part(self, fn, out, ids) -> np.ndarray:
        """What the reference computes of a sublayer's output at the padded length: its real rows,
        or the logits row."""
        if fn is final_projection:
            return np.asarray(out)[0]
        return _rows(out, self.check_ids(ids).size)

    def bisect_passes(self, tensor_name: str, ids, upstream_value, is_wrong) -> dict | None:
        """Which CPU pipeline step makes the sublayer producing ``tensor_name``, run on
        ``upstream_value``, wrong by ``is_wrong`` (judging its real rows, or the logits row):
        ``{"introduced_by", "outcome", "steps": [{"step", "outcome"}]}`` (compiler.diagnose.bisect_passes);
        None on the GPU target, whose pipeline is another."""
        if self.target != "cpu":
            return None
        from compiler.diagnose import bisect_passes
        fn, args, static = self.sublayer_call(tensor_name, ids, upstream_value)
        found = bisect_passes(fn, args, static, is_wrong=lambda out: is_wrong(self._real_part(fn, out, ids)))
        return {"introduced_by": found.introduced_by, "outcome": found.outcome,
                "steps": [{"step": step, "outcome": outcome} for step, outcome in found.steps]}

    def localize(self, tensor_name: str, ids, upstream_value) -> dict | None:
        """Re-run the sublayer producing ``tensor_name`` on ``upstream_value`` op by op against NumPy
        (each op within its own rounding: compiler.diagnose)."""
        from compiler.diagnose import localize
        fn, args, static = self.sublayer_call(tensor_name, ids, upstream_value)
        found = localize(fn, args, static, target=self.target)
        return None if found is None else found.as_dict()


class FusedGPT2(CompiledGPT2):
    """The whole forward pass in one compiled module."""

    mode = "fused"

    def __init__(self, model: GPT2Model, target: str = "cpu"):
        super().__init__(model, target)
        from compiler import jit
        # traced with sublayer marks (the same graph and IR), so an op named by a compile error
        # can be placed in its sublayer
        fused, self._marks = marking_sublayers(gpt2_fused)
        self.fused_fn = jit(fused, target=target)

    def forward(self, ids, trace: dict | None = None) -> np.ndarray:
        ids = self.check_ids(ids)
        params, wte_out = self.weights()
        logits = self.fused_fn(self._padded(ids), np.array([ids.size - 1]), params, wte_out, n_head=self.config.n_head)[0]
        if trace is not None:
            trace["logits"] = logits
        return logits

    def sublayer_of_node(self, node_id: int | None) -> str | None:
        """The sublayer that made graph node ``node_id`` of the forward pass traced last (what a
        ``CompileError`` raised by the forward names)."""
        return sublayer_of(node_id, self._marks)

    def localize(self, tensor_name, ids, upstream_value=None) -> dict | None:
        """Re-run the whole forward pass on ``ids`` op by op against NumPy (each op within its own
        rounding: compiler.diagnose). Fused mode has one tensor, the logits, and no upstream value:
        the pass starts from the token ids. Costs a compile of the pass with every intermediate as
        an output (minutes for GPT-2 small on 2 cores; the kernel cache keeps it)."""
        from compiler.diagnose import localize
        if tensor_name != "logits":
            raise ValueError(f"fused mode computes only the logits, not {tensor_name!r}")
        ids = self.check_ids(ids)
        args = (self._padded(ids), np.array([ids.size - 1]), self.params, self.wte_out)
        fn, marks = marking_sublayers(gpt2_fused)
        found = localize(fn, args, {"n_head": self.config.n_head}, target=self.target)
        if found is None:
            return None
        return {**found.as_dict(), "sublayer": sublayer_of(found.node_id, marks)}


# --------------------------------------------------------------------------- fused ops -> sublayers
# The fused pass is one graph, but its ops are created in model order while it is traced. Marking
# the graph's id counter where each sublayer starts (a block's iteration: attention; its first use
# of ln_2: the feed-forward; the loop's end: the final projection) tells which sublayer made an
# op, in the names subgraph mode's tensors have.


class _MarkedBlock:
    """A block's parameters that mark where its feed-forward sublayer starts: at the first read of
    ``ln_2``, which ``gpt2_fused`` makes after the attention residual and before anything else of
    the feed-forward."""

    def __init__(self, block, layer: int, marks: list):
        self._block, self._layer, self._marks, self._marked = block, layer, marks, False

    def __getattr__(self, name):
        if name == "ln_2" and not self._marked:
            self._marked = True
            self._marks.append((_next_node_id(), f"h.{self._layer}.output"))
        return getattr(self._block, name)


class _MarkedBlocks:
    """``params.blocks`` that marks each block's start (its attention sublayer) and the loop's end."""

    def __init__(self, blocks, marks: list):
        self._blocks, self._marks = list(blocks), marks

    def __len__(self):
        return len(self._blocks)

    def __iter__(self):
        for layer, block in enumerate(self._blocks):
            self._marks.append((_next_node_id(), f"h.{layer}.attention"))
            yield _MarkedBlock(block, layer, self._marks)
        self._marks.append((_next_node_id(), "logits"))


def _next_node_id() -> int:
    """An id no node will have, below every node made after it (the graph's ids only increase)."""
    from compiler.graph import _ids
    return next(_ids)


def marking_sublayers(fused=None):
    """(``fused`` taking the same arguments, marks): each trace of the returned function fills
    ``marks`` with (node id, sublayer) where each sublayer's ops start (see ``sublayer_of``)."""
    fused = fused or gpt2_fused
    marks: list = []

    @machinery
    @functools.wraps(fused)  # named as the pass it marks (build logs, errors)
    def gpt2_fused_marked(ids, last, params, wte_out, n_head: int):  # the same argument names: same input paths
        marks.clear()
        return fused(ids, last, dataclasses.replace(params, blocks=_MarkedBlocks(params.blocks, marks)), wte_out,
                     n_head=n_head)

    return gpt2_fused_marked, marks


def sublayer_of(node_id: int | None, marks: list) -> str | None:
    """The sublayer (``embedding``, ``h.{i}.attention``, ``h.{i}.output``, ``logits``) whose ops a
    node made while ``marks`` were taken belongs to; None when the node id is unknown. Before the
    first block only the embedding makes ops (the causal mask is NumPy on a static shape: a
    constant, made where a block adds it)."""
    if node_id is None:
        return None
    found = "embedding"
    for start, name in marks:
        if node_id > start:
            found = name
    return found


def compile_model(model: GPT2Model, mode: str = "subgraph", target: str = "cpu") -> CompiledGPT2:
    if mode == "subgraph":
        return SubgraphGPT2(model, target)
    if mode == "fused":
        return FusedGPT2(model, target)
    raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")


@dataclass
class Completion:
    input_ids: list
    output_ids: list
    completion: str
    mode: str
    checkpoint: dict


def generate_text(model: GPT2Model, prompt: str, n_tokens: int, mode: str = "subgraph", target: str = "cpu", progress=None) -> Completion:
    ids = model.tokenizer.encode(prompt)
    if not ids:
        raise ValueError("the prompt is empty: it encodes to no tokens")
    runner = compile_model(model, mode, target)
    out = runner.generate(ids, n_tokens, progress=progress)
    return Completion(list(ids), out, model.tokenizer.decode(out), mode,
                      {"name": model.checkpoint.name, "sha256": model.checkpoint.sha256})
