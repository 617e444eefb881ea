"""Saving and loading a :class:`~fieldrank.hybrid.HybridRetriever` (no pickle anywhere).

Layout of an index directory (format :data:`FORMAT_NAME`, version :data:`FORMAT_VERSION`)::

    manifest.json      format name and version, fieldrank version, n_docs, dim, normalize,
                       and for every other file: its size, sha256 and (.npy) shape and dtype
    embeddings.npy     (N, d) float32, written and read with allow_pickle=False
    texts.json         the N texts, a JSON list of str
    config.toml        the RetrieverConfig (RetrieverConfig.save_toml)
    bm25/              BM25Index.save: bm25s .npy arrays + JSON vocabulary and parameters
    timeline_*.npy     only when the retriever was given a fieldrank.temporal.Timeline:
                       session keys (int64), session dates (datetime64[D]) and time cues (bool)

:func:`save_index` writes everything into a fresh sibling directory, writes the manifest
last, and only then moves it into place, so a crash never leaves something that loads.

:func:`load_index` checks, before building anything: the manifest's format and version; that
every listed file is a plain relative path inside the directory (a symlink that resolves
outside it is refused); that every file in ``bm25/`` is listed; sizes (catching truncation),
sha256 (``verify=True``), and ``.npy`` shape and dtype against the manifest; and that the
texts, embeddings and BM25 index agree on N. Every problem raises :class:`IndexFormatError`
(a ``ValueError``); nothing is returned half-loaded.

Replacing an index that readers have open: use ``save(directory, overwrite=True)`` — the only
supported way. It writes the new index completely beside the old one, then renames the old
directory away, renames the new one into place and removes the old files by name. A reader that
loaded the old index with ``mmap=True`` keeps its mapping of the old, unchanged files (the kernel
keeps an unlinked file alive while it is mapped) and never sees a partial file. Writing over
``embeddings.npy`` in place (``np.save`` to the same path, ``cp``, ``rsync --inplace``, a
truncation) changes or shortens the pages a reader has mapped: it reads other data, or dies of
SIGBUS on pages past the new end — that cannot be caught from Python. A ``load`` that runs
during the two renames may find no directory (``FileNotFoundError``) or refuse a mix
(``IndexFormatError``); retrying it is safe.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol, Union

import numpy as np

from ._api import public_dir
from ._validation import unit_rows
from .bm25 import BM25Index
from .config import RetrieverConfig
from .temporal import Timeline

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "IndexFormatError",
    "LoadedIndex",
    "load_index",
    "save_index",
]

__dir__ = public_dir(__all__)


FORMAT_NAME = "fieldrank.hybrid-index"
#: Bump when the layout changes; :func:`load_index` refuses any other version.
FORMAT_VERSION = 1

MANIFEST_FILE = "manifest.json"
EMBEDDINGS_FILE = "embeddings.npy"
TEXTS_FILE = "texts.json"
CONFIG_FILE = "config.toml"
BM25_DIR = "bm25"
REQUIRED_FILES = (EMBEDDINGS_FILE, TEXTS_FILE, CONFIG_FILE)
#: Timeline fields saved as ``timeline_<field>.npy`` (listed under "timeline" in the manifest).
TIMELINE_FIELDS = ("session", "time", "cue")
_TIMELINE_DTYPE_KINDS = {"session": "iu", "time": "M", "cue": "b"}
_NPY_SUFFIX = ".npy"
_HASH_CHUNK_BYTES = 1 << 20
_STAGING_PREFIX = ".fieldrank-staging-"
_BACKUP_PREFIX = ".fieldrank-old-"

PathLike = Union[str, "os.PathLike[str]"]


class SavedParts(Protocol):
    """What :func:`save_index` reads of an index (a :class:`~fieldrank.hybrid.HybridRetriever`)."""

    @property
    def texts(self) -> tuple[str, ...]: ...
    @property
    def embeddings(self) -> np.ndarray: ...
    @property
    def config(self) -> RetrieverConfig: ...
    @property
    def bm25(self) -> BM25Index: ...
    @property
    def timeline(self) -> Optional[Timeline]: ...
    @property
    def normalize(self) -> bool: ...


class IndexFormatError(ValueError):
    """A saved index that cannot be loaded: unknown version, missing/corrupt/truncated/escaping file."""


@dataclass(frozen=True)
class LoadedIndex:
    """The validated parts of a saved index (see :meth:`HybridRetriever.load`)."""

    texts: tuple[str, ...]
    embeddings: np.ndarray
    config: RetrieverConfig
    bm25: BM25Index
    normalize: bool
    timeline: Optional[Timeline] = None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_HASH_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_npy_header(path: Path, *, strict: bool = True) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of a .npy file, read from its header only (no pickle, nothing allocated).

    With ``strict`` (loading), raises ValueError when the header declares Python objects or data
    that does not fill the file exactly: a header claiming 10**11 rows must be refused before
    anything sizes an allocation by it (numpy would ask for terabytes). ``strict=False``
    describes any file (the manifest of a save).
    """
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version not in readers:
            msg = f"unsupported .npy format version {version}"
            raise ValueError(msg)
        shape, _fortran_order, dtype = readers[version](f)
        data_offset = f.tell()
        file_bytes = os.fstat(f.fileno()).st_size
    if not strict:
        return tuple(int(n) for n in shape), dtype
    if dtype.hasobject:
        msg = f"it holds Python objects (dtype {dtype}); only plain numeric arrays are read"
        raise ValueError(msg)
    shape = tuple(int(n) for n in shape)
    data_bytes = math.prod(shape) * dtype.itemsize
    if data_offset + data_bytes != file_bytes:
        msg = (f"its header declares shape {shape} of {dtype} ({data_bytes:,} bytes of data), but the file "
               f"holds {file_bytes - data_offset:,} bytes after the header (truncated or tampered)")
        raise ValueError(msg)
    return shape, dtype


def _describe_file(root: Path, relative: str) -> dict[str, Any]:
    path = root / relative
    entry: dict[str, Any] = {"bytes": path.stat().st_size, "sha256": _sha256(path)}
    if relative.endswith(_NPY_SUFFIX):
        shape, dtype = read_npy_header(path, strict=False)
        entry["shape"] = list(shape)
        entry["dtype"] = dtype.str
    return entry


def save_index(retriever: SavedParts, directory: PathLike, *, overwrite: bool = False) -> None:
    """Write ``retriever`` to ``directory`` (see the module notes for the layout).

    Parameters
    ----------
    retriever : HybridRetriever
    directory : path
        Created if missing. If it exists it must be empty, or hold an index and
        ``overwrite=True`` (the old index is replaced only once the new one is complete).
    overwrite : bool, default False

    Raises
    ------
    FileExistsError
        If ``directory`` is not empty and ``overwrite`` is False, or holds something that is
        not a fieldrank index.
    """
    from . import __version__

    target = Path(directory)
    if target.exists():
        if not target.is_dir():
            msg = f"{target} exists and is not a directory"
            raise FileExistsError(msg)
        contents = list(target.iterdir())
        if contents and not overwrite:
            msg = f"{target} is not empty; pass overwrite=True to replace the index in it"
            raise FileExistsError(msg)
        if contents and not (target / MANIFEST_FILE).is_file():
            msg = f"{target} is not empty and holds no fieldrank index ({MANIFEST_FILE}); refusing to replace it"
            raise FileExistsError(msg)
    target.parent.mkdir(parents=True, exist_ok=True)

    staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=target.parent))
    try:
        E = np.ascontiguousarray(retriever.embeddings)
        np.save(staging / EMBEDDINGS_FILE, E, allow_pickle=False)
        (staging / TEXTS_FILE).write_text(json.dumps(list(retriever.texts), ensure_ascii=False), encoding="utf-8")
        retriever.config.save_toml(staging / CONFIG_FILE)
        retriever.bm25.save(staging / BM25_DIR)
        timeline_fields = _save_timeline(retriever.timeline, staging)
        relative = [*REQUIRED_FILES, *(_timeline_file(name) for name in timeline_fields),
                    *sorted(f"{BM25_DIR}/{p.name}" for p in (staging / BM25_DIR).iterdir())]
        manifest = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "fieldrank_version": __version__,
            "n_docs": len(retriever.texts),
            "dim": int(E.shape[1]),
            "normalize": retriever.normalize,
            "timeline": timeline_fields,
            "files": {name: _describe_file(staging, name) for name in relative},
        }
        # Written last: a directory without a manifest never loads.
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        _move_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _timeline_file(field: str) -> str:
    return f"timeline_{field}.npy"


def _save_timeline(timeline: Optional[Timeline], directory: Path) -> list[str]:
    """Write the timeline's arrays (those that are set); returns the fields written."""
    if timeline is None:
        return []
    written = []
    for field in TIMELINE_FIELDS:
        value = getattr(timeline, field)
        if value is not None:
            np.save(directory / _timeline_file(field), np.ascontiguousarray(value), allow_pickle=False)
            written.append(field)
    return written


def _load_timeline(root: Path, manifest: dict[str, Any], n_docs: int) -> Optional[Timeline]:
    listed = manifest.get("timeline", [])
    if not isinstance(listed, list) or any(f not in TIMELINE_FIELDS for f in listed) or (
            listed and "session" not in listed):
        raise _fail(root, f"{MANIFEST_FILE} field 'timeline' is invalid: {listed!r}")
    if not listed:
        return None
    arrays = {}
    for field in listed:
        name = _timeline_file(field)
        if name not in manifest["files"]:
            raise _fail(root, f"{MANIFEST_FILE} does not list {name}")
        try:
            array = np.load(root / name, allow_pickle=False)
        except ValueError as exc:
            raise _fail(root, f"{name} cannot be read ({exc})") from None
        if array.shape != (n_docs,) or array.dtype.kind not in _TIMELINE_DTYPE_KINDS[field]:
            raise _fail(root, f"{name} must hold {n_docs} values, got {array.dtype} {array.shape}")
        arrays[field] = array
    try:
        return Timeline(**arrays)
    except ValueError as exc:
        raise _fail(root, f"the timeline is invalid ({exc})") from None


def _move_into_place(staging: Path, target: Path) -> None:
    if not target.exists():
        os.replace(staging, target)
        return
    if not any(target.iterdir()):
        target.rmdir()
        os.replace(staging, target)
        return
    backup = Path(tempfile.mkdtemp(prefix=_BACKUP_PREFIX, dir=target.parent))
    backup.rmdir()
    os.replace(target, backup)
    os.replace(staging, target)
    shutil.rmtree(backup, ignore_errors=True)


# ------------------------------------------------------------------ loading
def _fail(root: Path, message: str) -> IndexFormatError:
    return IndexFormatError(f"cannot load index {root}: {message}")


def _read_manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST_FILE
    if not path.is_file():
        raise _fail(root, f"{MANIFEST_FILE} is missing (not a fieldrank index, or an unfinished save)")
    _inside(root, MANIFEST_FILE)
    manifest = _read_json(root, MANIFEST_FILE)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise _fail(root, f"{MANIFEST_FILE} does not describe a {FORMAT_NAME}")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise _fail(root, (f"format version {version!r} (written by fieldrank "
                           f"{manifest.get('fieldrank_version', '?')}) is not supported; this fieldrank reads "
                           f"version {FORMAT_VERSION}"))
    for key, kind in (("n_docs", int), ("dim", int), ("normalize", bool), ("files", dict)):
        value = manifest.get(key)
        if not isinstance(value, kind) or (kind is int and (isinstance(value, bool) or value <= 0)):
            raise _fail(root, f"{MANIFEST_FILE} field {key!r} is missing or invalid: {value!r}")
    return manifest


def _read_json(root: Path, name: str) -> Any:
    """A JSON file of the index; any way it fails to parse is an IndexFormatError naming it."""
    try:
        return json.loads((root / name).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(root, f"{name} is not valid JSON ({exc})") from None
    except RecursionError:
        raise _fail(root, f"{name} is nested too deeply to be an index file") from None


def _inside(root: Path, relative: str) -> Path:
    """``root / relative``, refusing absolute paths, '..' and symlinks that leave ``root``."""
    candidate = Path(relative)
    if candidate.is_absolute() or ".." in candidate.parts or not candidate.parts:
        raise _fail(root, f"file name {relative!r} in {MANIFEST_FILE} is not a plain relative path")
    path = root / candidate
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop: RuntimeError before Python 3.13
        raise _fail(root, f"{relative} cannot be resolved ({exc})") from None
    if resolved != root and root not in resolved.parents:
        raise _fail(root, f"{relative} resolves to {resolved}, outside the index directory (symlink refused)")
    return path


def _check_files(root: Path, manifest: dict[str, Any], verify: bool) -> None:
    files = manifest["files"]
    missing = [name for name in REQUIRED_FILES if name not in files]
    if missing:
        raise _fail(root, f"{MANIFEST_FILE} does not list {missing}")
    bm25_dir = _inside(root, BM25_DIR)
    if not bm25_dir.is_dir():
        raise _fail(root, f"{BM25_DIR}/ is missing")
    unlisted = sorted(f"{BM25_DIR}/{p.name}" for p in bm25_dir.iterdir() if f"{BM25_DIR}/{p.name}" not in files)
    if unlisted:
        raise _fail(root, f"files not listed in {MANIFEST_FILE}: {unlisted}")
    for name, expected in files.items():
        path = _inside(root, name)
        if not path.is_file():
            raise _fail(root, f"{name} is missing")
        if not isinstance(expected, dict):
            raise _fail(root, f"{MANIFEST_FILE} entry for {name} is invalid")
        size = path.stat().st_size
        if size != expected.get("bytes"):
            raise _fail(root, (f"{name} has {size} bytes, the manifest says {expected.get('bytes')} "
                               "(truncated or modified)"))
        if name.endswith(_NPY_SUFFIX):
            try:
                shape, dtype = read_npy_header(path)
                dtype = dtype.str
            except ValueError as exc:
                raise _fail(root, f"{name} is not a valid .npy file ({exc})") from None
            if list(shape) != expected.get("shape") or dtype != expected.get("dtype"):
                raise _fail(root, (f"{name} holds shape {list(shape)} dtype {dtype}, the manifest says "
                                   f"shape {expected.get('shape')} dtype {expected.get('dtype')}"))
        if verify and _sha256(path) != expected.get("sha256"):
            raise _fail(root, f"{name} does not match its sha256 in {MANIFEST_FILE} (corrupt or modified)")


def load_index(directory: PathLike, *, mmap: bool = False, verify: bool = True) -> LoadedIndex:
    """Read and validate a directory written by :func:`save_index`.

    Parameters
    ----------
    directory : path
    mmap : bool, default False
        Memory-map ``embeddings.npy`` read-only instead of reading it.
    verify : bool, default True
        Compare each file's sha256 with the manifest.

    Returns
    -------
    LoadedIndex

    Raises
    ------
    FileNotFoundError
        If ``directory`` does not exist.
    IndexFormatError
        For anything wrong with its contents (see the module notes).
    """
    root = Path(directory)
    if not root.is_dir():
        msg = f"index directory {root} does not exist"
        raise FileNotFoundError(msg)
    root = root.resolve()
    manifest = _read_manifest(root)
    _check_files(root, manifest, verify)
    n_docs, dim = manifest["n_docs"], manifest["dim"]

    try:
        E = np.load(root / EMBEDDINGS_FILE, allow_pickle=False, mmap_mode="r" if mmap else None)
    except ValueError as exc:
        raise _fail(root, f"{EMBEDDINGS_FILE} cannot be read ({exc})") from None
    if E.dtype != np.float32 or E.shape != (n_docs, dim) or not E.flags.c_contiguous:
        raise _fail(root, f"{EMBEDDINGS_FILE} must be C-ordered float32 ({n_docs}, {dim}), got {E.dtype} {E.shape}")

    texts = _read_json(root, TEXTS_FILE)
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise _fail(root, f"{TEXTS_FILE} must be a JSON list of strings")
    if len(texts) != n_docs:
        raise _fail(root, f"{TEXTS_FILE} holds {len(texts)} texts, the manifest says n_docs = {n_docs}")

    try:
        config = RetrieverConfig.from_toml((root / CONFIG_FILE).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError, TypeError) as exc:
        raise _fail(root, f"{CONFIG_FILE} is not a valid configuration ({exc})") from None

    try:
        bm25 = BM25Index.load(root / BM25_DIR)
    except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
        raise _fail(root, f"{BM25_DIR}/ cannot be loaded ({type(exc).__name__}: {exc})") from None
    if len(bm25) != n_docs:
        raise _fail(root, f"{BM25_DIR}/ indexes {len(bm25)} documents, the manifest says n_docs = {n_docs}")
    if bm25.params != config.bm25:
        raise _fail(root, f"{BM25_DIR}/ was built with {bm25.params!r}, {CONFIG_FILE} asks for {config.bm25!r}")

    try:
        # Stored rows are already unit; this re-checks them (finite, unit norm) without copying.
        E = unit_rows(E, normalize=False)
    except ValueError as exc:
        raise _fail(root, f"{EMBEDDINGS_FILE}: {exc}") from None
    timeline = _load_timeline(root, manifest, n_docs)
    return LoadedIndex(tuple(texts), E, config, bm25, manifest["normalize"], timeline)
