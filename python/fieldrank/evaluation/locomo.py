"""Loader for the LoCoMo turn-retrieval data (docs/spec.md §9; formats in the data README).

The data folder holds ``locomo10.json`` (the source), ``turns.jsonl`` (one line per
dialogue turn, in document order), ``questions.jsonl`` (one line per QA item) and
``emb/<set>/{turns,questions}.npy`` (float32, L2-normalised rows aligned with the two
``.jsonl`` files). :func:`load_locomo` reads them into a frozen :class:`LocomoData`
and checks the invariants the evaluation relies on:

- turns are grouped by conversation in one contiguous block each, so a
  conversation is the row range ``conv_ranges[c] = (start, stop)``;
- ``dia_id`` is unique inside each conversation and every resolved evidence id
  names one of that conversation's turns;
- every ``session_date_time`` parses (format ``"1:56 pm on 8 May, 2023"``);
- the embedding matrices have one row per turn / question and match the sha256
  recorded in their ``manifest.json``.

A question is *scored* when it has at least one resolved evidence id (1,982 of
1,986). Splits are by conversation: :data:`SPLITS` maps ``"tune"`` to conversations
0–4, ``"holdout"`` to 5–9 and ``"all"`` to 0–9.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Union

import numpy as np

if TYPE_CHECKING:
    from ..temporal import Timeline

__all__ = [
    "ADVERSARIAL_CATEGORY",
    "CATEGORY_NAMES",
    "DATA_DIR_ENV_VAR",
    "DEFAULT_EMBEDDING_SET",
    "SPLITS",
    "DataNotFoundError",
    "LocomoData",
    "LocomoFormatError",
    "LocomoQuestions",
    "LocomoTurns",
    "assert_splits_disjoint",
    "available_embedding_sets",
    "category_subsets",
    "default_data_dir_candidates",
    "file_sha256",
    "load_locomo",
    "locomo_timeline",
    "parse_session_date_time",
    "resolve_data_dir",
    "split_question_indices",
]

# ------------------------------------------------------------------------ constants
DATA_DIR_ENV_VAR: Final[str] = "FIELDRANK_LOCOMO_DIR"
"""Environment variable that, when set, names the data folder (checked first)."""

RELATIVE_DATA_DIR: Final[Path] = Path("..", "shared", "data", "locomo")
"""Where the data sits relative to the working directory or the repository root."""

SOURCE_FILE: Final[str] = "locomo10.json"
TURNS_FILE: Final[str] = "turns.jsonl"
QUESTIONS_FILE: Final[str] = "questions.jsonl"
EMBEDDINGS_DIR: Final[str] = "emb"
TURN_EMBEDDINGS_FILE: Final[str] = "turns.npy"
QUESTION_EMBEDDINGS_FILE: Final[str] = "questions.npy"
MANIFEST_FILE: Final[str] = "manifest.json"
REQUIRED_FILES: Final[tuple[str, ...]] = (SOURCE_FILE, TURNS_FILE, QUESTIONS_FILE)

DEFAULT_EMBEDDING_SET: Final[str] = "minilm-l6-v2"
EMBEDDING_DTYPE: Final[type] = np.float32
MATRIX_NDIM: Final[int] = 2

HASH_CHUNK_BYTES: Final[int] = 1 << 20

CATEGORY_NAMES: Final[Mapping[int, str]] = MappingProxyType(
    {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
)
"""LoCoMo ``category`` field → question type (verified in the data README)."""

ADVERSARIAL_CATEGORY: Final[int] = 5

SPLITS: Final[Mapping[str, range]] = MappingProxyType(
    {"tune": range(0, 5), "holdout": range(5, 10), "all": range(0, 10)}
)
"""Conversation indices in each split; tune and holdout never share a conversation."""

DISJOINT_SPLITS: Final[tuple[str, str]] = ("tune", "holdout")

SESSION_DATE_TIME_PATTERN: Final[re.Pattern[str]] = re.compile(
    r"^\s*(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<meridiem>am|pm)\s+on\s+"
    r"(?P<day>\d{1,2})\s+(?P<month>[A-Za-z]+),?\s+(?P<year>\d{4})\s*$",
    re.IGNORECASE,
)
"""``"1:56 pm on 8 May, 2023"``; parsed without ``strptime`` so the locale cannot matter."""

MONTH_NAMES: Final[tuple[str, ...]] = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)
MONTH_ABBREVIATION_LENGTH: Final[int] = 3
MONTHS: Final[Mapping[str, int]] = MappingProxyType(
    {
        **{name: number for number, name in enumerate(MONTH_NAMES, start=1)},
        **{
            name[:MONTH_ABBREVIATION_LENGTH]: number
            for number, name in enumerate(MONTH_NAMES, start=1)
        },
    }
)
"""Lower-case full and three-letter month names → month number."""
HOURS_PER_HALF_DAY: Final[int] = 12
DATETIME_UNIT: Final[str] = "datetime64[m]"


# ----------------------------------------------------------------------- exceptions
class DataNotFoundError(FileNotFoundError):
    """The LoCoMo data folder, one of its files or an embedding set is missing."""


class LocomoFormatError(ValueError):
    """The LoCoMo files break an invariant the evaluation relies on."""


# ----------------------------------------------------------------------- containers
def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _object_array(items: Sequence[Any]) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return _frozen(array)


@dataclass(frozen=True)
class LocomoTurns:
    """Column arrays over the dialogue turns, row ``i`` = line ``i`` of ``turns.jsonl``.

    Attributes
    ----------
    conv_index : numpy.ndarray
        int64 ``(n_turns,)``, conversation 0–9.
    dia_id : numpy.ndarray
        object (str) ``(n_turns,)``, e.g. ``"D1:3"``.
    session : numpy.ndarray
        int64 ``(n_turns,)``.
    session_date_time : numpy.ndarray
        object (str) ``(n_turns,)``, the source string.
    session_datetime : numpy.ndarray
        ``datetime64[m]`` ``(n_turns,)``, the parsed session start.
    speaker, text, embed_text : numpy.ndarray
        object (str) ``(n_turns,)``.
    """

    conv_index: np.ndarray
    dia_id: np.ndarray
    session: np.ndarray
    session_date_time: np.ndarray
    session_datetime: np.ndarray
    speaker: np.ndarray
    text: np.ndarray
    embed_text: np.ndarray

    def __len__(self) -> int:
        return len(self.conv_index)

    def row(self, position: int) -> dict[str, Any]:
        """Return turn ``position`` as a dict of plain Python values."""
        return {
            "conv_index": int(self.conv_index[position]),
            "dia_id": self.dia_id[position],
            "session": int(self.session[position]),
            "session_date_time": self.session_date_time[position],
            "session_datetime": self.session_datetime[position].astype(datetime),
            "speaker": self.speaker[position],
            "text": self.text[position],
            "embed_text": self.embed_text[position],
        }


@dataclass(frozen=True)
class LocomoQuestions:
    """Column arrays over the QA items, row ``i`` = line ``i`` of ``questions.jsonl``.

    Attributes
    ----------
    conv_index, qid, category : numpy.ndarray
        int64 ``(n_questions,)``.
    question, answer : numpy.ndarray
        object (str) ``(n_questions,)``.
    evidence_resolved : tuple of tuple of str
        Resolved evidence ``dia_id`` s per question (may be empty).
    is_scored : numpy.ndarray
        bool ``(n_questions,)``, True when ``evidence_resolved`` is non-empty.
    gold_positions : tuple of numpy.ndarray
        int64 positions of the gold turns *relative to the start of the question's
        conversation*, in ``evidence_resolved`` order (empty when not scored).
    gold_positions_absolute : tuple of numpy.ndarray
        The same turns as row positions in :class:`LocomoTurns` / ``turns.npy``.
    """

    conv_index: np.ndarray
    qid: np.ndarray
    question: np.ndarray
    answer: np.ndarray
    category: np.ndarray
    evidence_resolved: tuple[tuple[str, ...], ...]
    is_scored: np.ndarray
    gold_positions: tuple[np.ndarray, ...]
    gold_positions_absolute: tuple[np.ndarray, ...]

    def __len__(self) -> int:
        return len(self.conv_index)


@dataclass(frozen=True)
class LocomoData:
    """Everything the LoCoMo evaluation reads, checked and read-only.

    Attributes
    ----------
    root : pathlib.Path
        The data folder.
    embedding_set : str or None
        Name of the loaded ``emb/<set>``, or None when embeddings were not loaded.
    turns : LocomoTurns
    questions : LocomoQuestions
    turn_embeddings : numpy.ndarray or None
        float32 ``(n_turns, dim)``, L2-normalised rows.
    question_embeddings : numpy.ndarray or None
        float32 ``(n_questions, dim)``, L2-normalised rows.
    conv_ranges : Mapping[int, tuple[int, int]]
        Conversation → ``(start, stop)`` row range in ``turns``.
    checksums : Mapping[str, str]
        sha256 hex digests keyed by path relative to ``root`` (the three source
        files and the two loaded ``.npy``), for report headers.
    """

    root: Path
    embedding_set: str | None
    turns: LocomoTurns
    questions: LocomoQuestions
    turn_embeddings: np.ndarray | None
    question_embeddings: np.ndarray | None
    conv_ranges: Mapping[int, tuple[int, int]]
    checksums: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def n_conversations(self) -> int:
        """Number of conversations."""
        return len(self.conv_ranges)

    @property
    def scored_mask(self) -> np.ndarray:
        """bool ``(n_questions,)``: questions with at least one gold turn."""
        return self.questions.is_scored

    def conversation_slice(self, conv_index: int) -> slice:
        """Row slice of conversation ``conv_index`` in ``turns`` / ``turn_embeddings``."""
        start, stop = self.conv_ranges[conv_index]
        return slice(start, stop)

    def split_question_indices(self, split: str, *, scored_only: bool = True) -> np.ndarray:
        """Question rows in ``split``; see :func:`split_question_indices`."""
        return split_question_indices(self, split, scored_only=scored_only)


# -------------------------------------------------------------------- path handling
def _repo_root() -> Path:
    """Repository root when running from a source checkout (``python/fieldrank/evaluation``)."""
    return Path(__file__).resolve().parents[3]


def default_data_dir_candidates() -> tuple[Path, ...]:
    """Folders searched, in order, when no path is given to :func:`load_locomo`.

    Returns
    -------
    tuple of pathlib.Path
        ``$FIELDRANK_LOCOMO_DIR`` (when set), ``<cwd>/../shared/data/locomo`` and
        ``<repo root>/../shared/data/locomo``.
    """
    candidates: list[Path] = []
    from_env = os.environ.get(DATA_DIR_ENV_VAR)
    if from_env:
        candidates.append(Path(from_env))
    candidates.append(Path.cwd() / RELATIVE_DATA_DIR)
    candidates.append(_repo_root() / RELATIVE_DATA_DIR)
    unique: dict[Path, None] = {}
    for candidate in candidates:
        unique.setdefault(candidate.resolve(), None)
    return tuple(unique)


def _missing_files(folder: Path) -> list[str]:
    return [name for name in REQUIRED_FILES if not (folder / name).is_file()]


def resolve_data_dir(path: str | os.PathLike[str] | None = None) -> Path:
    """Find the LoCoMo data folder.

    Parameters
    ----------
    path : path-like, optional
        The folder. When None, the first of :func:`default_data_dir_candidates` that
        holds the required files is used.

    Returns
    -------
    pathlib.Path
        Resolved folder holding ``locomo10.json``, ``turns.jsonl`` and
        ``questions.jsonl``.

    Raises
    ------
    DataNotFoundError
        Naming every folder looked at and the files expected there.
    """
    expected = ", ".join(REQUIRED_FILES)
    if path is not None:
        folder = Path(path).resolve()
        if not folder.is_dir():
            msg = (
                f"LoCoMo data folder not found: {folder} does not exist. Expected a "
                f"folder holding {expected} and emb/<set>/{{turns,questions}}.npy "
                "(see shared/data/locomo/README.md)."
            )
            raise DataNotFoundError(msg)
        missing = _missing_files(folder)
        if missing:
            msg = f"LoCoMo data folder {folder} lacks {', '.join(missing)} (expected {expected})."
            raise DataNotFoundError(msg)
        return folder
    candidates = default_data_dir_candidates()
    for candidate in candidates:
        if candidate.is_dir() and not _missing_files(candidate):
            return candidate
    looked = "; ".join(str(candidate) for candidate in candidates)
    msg = (
        f"LoCoMo data folder not found. Looked in: {looked}. Expected a folder holding "
        f"{expected} and emb/<set>/{{turns,questions}}.npy; pass its path or set "
        f"{DATA_DIR_ENV_VAR}."
    )
    raise DataNotFoundError(msg)


def available_embedding_sets(path: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """Names of the ``emb/<set>`` folders that hold both ``.npy`` files, sorted."""
    embeddings_root = resolve_data_dir(path) / EMBEDDINGS_DIR
    if not embeddings_root.is_dir():
        return ()
    return tuple(
        sorted(
            entry.name
            for entry in embeddings_root.iterdir()
            if (entry / TURN_EMBEDDINGS_FILE).is_file()
            and (entry / QUESTION_EMBEDDINGS_FILE).is_file()
        )
    )


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(HASH_CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


# -------------------------------------------------------------------------- parsing
def parse_session_date_time(text: str) -> datetime:
    """Parse a LoCoMo session timestamp such as ``"1:56 pm on 8 May, 2023"``.

    Accepts 1- or 2-digit hours and days, ``am``/``pm`` in any case, full or
    three-letter month names and an optional comma before the year. Locale-independent.

    Parameters
    ----------
    text : str

    Returns
    -------
    datetime.datetime
        Naive (the data carries no time zone).

    Raises
    ------
    LocomoFormatError
        If the text does not match or names an impossible date or time.
    """
    match = SESSION_DATE_TIME_PATTERN.match(text)
    if match is None:
        msg = f"cannot parse session date/time {text!r} (expected like '1:56 pm on 8 May, 2023')"
        raise LocomoFormatError(msg)
    month = MONTHS.get(match["month"].lower())
    if month is None:
        msg = f"unknown month {match['month']!r} in session date/time {text!r}"
        raise LocomoFormatError(msg)
    hour = int(match["hour"])
    if not 1 <= hour <= HOURS_PER_HALF_DAY:
        msg = f"hour {hour} out of range 1-12 in session date/time {text!r}"
        raise LocomoFormatError(msg)
    hour %= HOURS_PER_HALF_DAY
    if match["meridiem"].lower() == "pm":
        hour += HOURS_PER_HALF_DAY
    try:
        return datetime(int(match["year"]), month, int(match["day"]), hour, int(match["minute"]))
    except ValueError as error:
        msg = f"impossible session date/time {text!r}: {error}"
        raise LocomoFormatError(msg) from error


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as error:
                msg = f"{path}:{line_number}: invalid JSON ({error.msg})"
                raise LocomoFormatError(msg) from error
    return records


def _conversation_ranges(conv_index: np.ndarray) -> dict[int, tuple[int, int]]:
    """Map each conversation to its row range, checking that each is one block."""
    if len(conv_index) == 0:
        msg = f"{TURNS_FILE} holds no turns"
        raise LocomoFormatError(msg)
    boundaries = np.flatnonzero(np.diff(conv_index)) + 1
    starts = np.concatenate(([0], boundaries))
    stops = np.concatenate((boundaries, [len(conv_index)]))
    ranges: dict[int, tuple[int, int]] = {}
    for start, stop in zip(starts.tolist(), stops.tolist()):
        conversation = int(conv_index[start])
        if conversation in ranges:
            first = ranges[conversation]
            msg = (
                f"turns of conversation {conversation} are not contiguous: rows "
                f"{first[0]}-{first[1] - 1} and again from row {start}"
            )
            raise LocomoFormatError(msg)
        ranges[conversation] = (start, stop)
    return ranges


def _build_turns(records: list[dict[str, Any]]) -> LocomoTurns:
    parsed_dates: dict[str, datetime] = {}
    for record in records:
        text = record["session_date_time"]
        if text not in parsed_dates:
            parsed_dates[text] = parse_session_date_time(text)
    session_datetime = np.array(
        [parsed_dates[record["session_date_time"]] for record in records], dtype=DATETIME_UNIT
    )
    return LocomoTurns(
        conv_index=_frozen(np.array([r["conv_index"] for r in records], dtype=np.int64)),
        dia_id=_object_array([r["dia_id"] for r in records]),
        session=_frozen(np.array([r["session"] for r in records], dtype=np.int64)),
        session_date_time=_object_array([r["session_date_time"] for r in records]),
        session_datetime=_frozen(session_datetime),
        speaker=_object_array([r["speaker"] for r in records]),
        text=_object_array([r["text"] for r in records]),
        embed_text=_object_array([r["embed_text"] for r in records]),
    )


def _dia_positions(
    turns: LocomoTurns, conv_ranges: Mapping[int, tuple[int, int]]
) -> dict[int, dict[str, int]]:
    """Per conversation, ``dia_id`` → position relative to the conversation start."""
    positions: dict[int, dict[str, int]] = {}
    for conversation, (start, stop) in conv_ranges.items():
        lookup: dict[str, int] = {}
        for offset, dia_id in enumerate(turns.dia_id[start:stop]):
            if dia_id in lookup:
                msg = f"conversation {conversation}: dia_id {dia_id!r} occurs twice"
                raise LocomoFormatError(msg)
            lookup[dia_id] = offset
        positions[conversation] = lookup
    return positions


def _build_questions(
    records: list[dict[str, Any]],
    turns: LocomoTurns,
    conv_ranges: Mapping[int, tuple[int, int]],
) -> LocomoQuestions:
    dia_positions = _dia_positions(turns, conv_ranges)
    evidence: list[tuple[str, ...]] = []
    relative: list[np.ndarray] = []
    absolute: list[np.ndarray] = []
    for row, record in enumerate(records):
        conversation = int(record["conv_index"])
        if conversation not in conv_ranges:
            msg = f"{QUESTIONS_FILE} row {row}: conversation {conversation} has no turns"
            raise LocomoFormatError(msg)
        ids = tuple(record["evidence_resolved"])
        lookup = dia_positions[conversation]
        unknown = [dia_id for dia_id in ids if dia_id not in lookup]
        if unknown:
            msg = (
                f"{QUESTIONS_FILE} row {row} (conversation {conversation}, qid "
                f"{record['qid']}): evidence ids {unknown} name no turn of that conversation"
            )
            raise LocomoFormatError(msg)
        if len(set(ids)) != len(ids):
            msg = f"{QUESTIONS_FILE} row {row}: evidence_resolved repeats an id: {list(ids)}"
            raise LocomoFormatError(msg)
        positions = np.array([lookup[dia_id] for dia_id in ids], dtype=np.int64)
        evidence.append(ids)
        relative.append(_frozen(positions))
        absolute.append(_frozen(positions + conv_ranges[conversation][0]))
    return LocomoQuestions(
        conv_index=_frozen(np.array([r["conv_index"] for r in records], dtype=np.int64)),
        qid=_frozen(np.array([r["qid"] for r in records], dtype=np.int64)),
        question=_object_array([r["question"] for r in records]),
        answer=_object_array([r["answer"] for r in records]),
        category=_frozen(np.array([r["category"] for r in records], dtype=np.int64)),
        evidence_resolved=tuple(evidence),
        is_scored=_frozen(np.array([len(ids) > 0 for ids in evidence], dtype=bool)),
        gold_positions=tuple(relative),
        gold_positions_absolute=tuple(absolute),
    )


def _load_matrix(path: Path, n_rows: int, *, mmap: bool) -> np.ndarray:
    matrix = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    if matrix.ndim != MATRIX_NDIM or matrix.shape[0] != n_rows:
        msg = f"{path}: expected shape ({n_rows}, dim), got {matrix.shape}"
        raise LocomoFormatError(msg)
    if matrix.dtype != EMBEDDING_DTYPE:
        msg = f"{path}: expected dtype float32, got {matrix.dtype}"
        raise LocomoFormatError(msg)
    if not mmap:
        matrix.flags.writeable = False
    return matrix


def _manifest_hashes(set_dir: Path) -> dict[str, str]:
    manifest_path = set_dir / MANIFEST_FILE
    if not manifest_path.is_file():
        return {}
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    return {
        name: entry["sha256"]
        for name, entry in manifest.get("files", {}).items()
        if isinstance(entry, dict) and "sha256" in entry
    }


# ------------------------------------------------------------------------- loading
def load_locomo(
    path: str | os.PathLike[str] | None = None,
    embedding_set: str | None = DEFAULT_EMBEDDING_SET,
    *,
    mmap: bool = False,
    checksums: bool = True,
) -> LocomoData:
    """Load and check the LoCoMo turns, questions and one embedding set.

    Parameters
    ----------
    path : path-like, optional
        The data folder; when None see :func:`default_data_dir_candidates`.
    embedding_set : str or None, default "minilm-l6-v2"
        Name of the ``emb/<set>`` folder to load, or None to load no embeddings.
    mmap : bool, default False
        Memory-map the ``.npy`` files (read-only) instead of reading them.
    checksums : bool, default True
        Compute the sha256 of the data files (for report headers) and check the
        ``.npy`` digests against ``emb/<set>/manifest.json`` when it lists them.

    Returns
    -------
    LocomoData

    Raises
    ------
    DataNotFoundError
        The folder, a required file or the embedding set is missing.
    LocomoFormatError
        An invariant listed in the module docstring does not hold, or a checksum
        does not match the manifest.
    """
    root = resolve_data_dir(path)
    turns = _build_turns(_read_jsonl(root / TURNS_FILE))
    conv_ranges = _conversation_ranges(turns.conv_index)
    questions = _build_questions(_read_jsonl(root / QUESTIONS_FILE), turns, conv_ranges)

    hashed_files = list(REQUIRED_FILES)
    turn_embeddings: np.ndarray | None = None
    question_embeddings: np.ndarray | None = None
    manifest_hashes: dict[str, str] = {}
    if embedding_set is not None:
        set_dir = root / EMBEDDINGS_DIR / embedding_set
        turn_path = set_dir / TURN_EMBEDDINGS_FILE
        question_path = set_dir / QUESTION_EMBEDDINGS_FILE
        if not (turn_path.is_file() and question_path.is_file()):
            available = ", ".join(available_embedding_sets(root)) or "none"
            msg = (
                f"embedding set {embedding_set!r} not found: expected {turn_path} and "
                f"{question_path}. Available sets: {available}."
            )
            raise DataNotFoundError(msg)
        turn_embeddings = _load_matrix(turn_path, len(turns), mmap=mmap)
        question_embeddings = _load_matrix(question_path, len(questions), mmap=mmap)
        if turn_embeddings.shape[1] != question_embeddings.shape[1]:
            msg = (
                f"embedding set {embedding_set!r}: turn dim {turn_embeddings.shape[1]} "
                f"differs from question dim {question_embeddings.shape[1]}"
            )
            raise LocomoFormatError(msg)
        prefix = f"{EMBEDDINGS_DIR}/{embedding_set}/"
        hashed_files += [prefix + TURN_EMBEDDINGS_FILE, prefix + QUESTION_EMBEDDINGS_FILE]
        manifest_hashes = {
            prefix + name: digest for name, digest in _manifest_hashes(set_dir).items()
        }

    digests: dict[str, str] = {}
    if checksums:
        digests = {name: file_sha256(root / name) for name in hashed_files}
        for name, expected in manifest_hashes.items():
            if name in digests and digests[name] != expected:
                msg = (
                    f"{root / name}: sha256 {digests[name]} does not match "
                    f"{expected} recorded in its {MANIFEST_FILE}"
                )
                raise LocomoFormatError(msg)

    return LocomoData(
        root=root,
        embedding_set=embedding_set,
        turns=turns,
        questions=questions,
        turn_embeddings=turn_embeddings,
        question_embeddings=question_embeddings,
        conv_ranges=MappingProxyType(conv_ranges),
        checksums=MappingProxyType(digests),
    )


# ---------------------------------------------------------------- splits and subsets
QuestionSource = Union[LocomoData, LocomoQuestions]


def _questions_of(source: QuestionSource) -> LocomoQuestions:
    return source.questions if isinstance(source, LocomoData) else source


def split_question_indices(
    source: QuestionSource, split: str, *, scored_only: bool = True
) -> np.ndarray:
    """Question rows whose conversation belongs to ``split``.

    Parameters
    ----------
    source : LocomoData or LocomoQuestions
    split : {"tune", "holdout", "all"}
        See :data:`SPLITS`.
    scored_only : bool, default True
        Keep only questions with at least one gold turn.

    Returns
    -------
    numpy.ndarray
        int64, ascending row indices into the questions (and ``questions.npy``).
    """
    if split not in SPLITS:
        msg = f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}"
        raise ValueError(msg)
    questions = _questions_of(source)
    keep = np.isin(questions.conv_index, np.asarray(SPLITS[split], dtype=np.int64))
    if scored_only:
        keep &= questions.is_scored
    return np.flatnonzero(keep).astype(np.int64)


def assert_splits_disjoint(source: QuestionSource) -> None:
    """Check that the tune and holdout splits share no conversation and no question.

    Raises
    ------
    AssertionError
        If they overlap (raised explicitly, so the check survives ``python -O``).
    """
    first, second = DISJOINT_SPLITS
    shared_conversations = set(SPLITS[first]) & set(SPLITS[second])
    if shared_conversations:
        msg = f"splits {first!r} and {second!r} share conversations {sorted(shared_conversations)}"
        raise AssertionError(msg)
    first_rows = split_question_indices(source, first, scored_only=False)
    second_rows = split_question_indices(source, second, scored_only=False)
    shared_rows = np.intersect1d(first_rows, second_rows)
    if shared_rows.size:
        msg = f"splits {first!r} and {second!r} share question rows {shared_rows[:10].tolist()}"
        raise AssertionError(msg)
    questions = _questions_of(source)
    first_keys = set(
        zip(questions.conv_index[first_rows].tolist(), questions.qid[first_rows].tolist())
    )
    second_keys = set(
        zip(questions.conv_index[second_rows].tolist(), questions.qid[second_rows].tolist())
    )
    if first_keys & second_keys:
        msg = f"splits {first!r} and {second!r} share (conv_index, qid) keys"
        raise AssertionError(msg)


def category_subsets(
    source: QuestionSource, rows: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Row masks for the reporting subsets of the LoCoMo tables.

    Parameters
    ----------
    source : LocomoData or LocomoQuestions
    rows : numpy.ndarray, optional
        Question rows to restrict to (e.g. a split); default: all scored questions.

    Returns
    -------
    dict of str to numpy.ndarray
        Keys in table order: ``"overall"``, ``"overall excl. cat 5"``, then
        ``"<category> <name>"`` (e.g. ``"1 multi-hop"``). Values are int64 question
        rows, a subset of ``rows``.
    """
    questions = _questions_of(source)
    if rows is None:
        rows = np.flatnonzero(questions.is_scored)
    rows = np.asarray(rows, dtype=np.int64)
    categories = questions.category[rows]
    subsets = {
        "overall": rows,
        f"overall excl. cat {ADVERSARIAL_CATEGORY}": rows[categories != ADVERSARIAL_CATEGORY],
    }
    for category, name in CATEGORY_NAMES.items():
        subsets[f"{category} {name}"] = rows[categories == category]
    return subsets


def locomo_timeline(data: LocomoData) -> "Timeline":
    """The turns of a loaded LoCoMo set as a :class:`fieldrank.temporal.Timeline` (the input of
    ``temporal`` legs). The dataset adapter lives with the dataset; :mod:`fieldrank.temporal`
    knows nothing of LoCoMo.

    Session keys are unique per (conversation, session); dates are ``turns.session_datetime``;
    time cues come from ``turns.embed_text`` (the texts the retriever indexes).
    """
    from ..temporal import Timeline, session_keys  # the native core: loaded only when asked for

    T = data.turns
    return Timeline.from_turns(session_keys(T.conv_index, T.session), T.session_datetime,
                               [str(t) for t in T.embed_text])
