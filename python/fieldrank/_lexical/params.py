"""BM25's parameters (:class:`BM25Params`: scoring variant, tokenizer, neighbour-text expansion) and
their defaults, the numbers of docs/spec.md §7 (not the native core's)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import Stemmer

from .. import _validation as _v
from .tokenizer import STOPWORD_LISTS

__all__ = ["BM25_METHODS", "DEFAULT_PARAMS", "BM25Params"]

#: Scoring variants of ``bm25s`` (``method``); the single list used for validation.
BM25_METHODS: tuple[str, ...] = ("robertson", "atire", "bm25l", "bm25+", "lucene")

# The BM25 numbers of the package live here (docs/spec.md §7), not in the native core.
DEFAULT_K1 = 1.5
DEFAULT_B = 0.75
#: Additive ``delta`` of the BM25L / BM25+ variants (ignored by the others); bm25s's default.
DEFAULT_DELTA = 0.5
DEFAULT_METHOD = "lucene"
DEFAULT_STOPWORDS = "en"
DEFAULT_STEMMER_LANGUAGE = "english"
DEFAULT_LOWERCASE = True

B_MIN = 0.0
B_MAX = 1.0
#: Neighbour-text expansion: off unless asked for (see the module notes).
DEFAULT_CONTEXT_WINDOW = 0
#: Weight of the context-document scores when ``context_window > 0``.
DEFAULT_CONTEXT_WEIGHT = 1.0


@dataclass(frozen=True)
class BM25Params:
    """Parameters of the BM25 leg (scoring variant and tokenizer).

    Parameters
    ----------
    k1 : float, default 1.5
        Term-frequency saturation, finite and > 0.
    b : float, default 0.75
        Length normalisation, in [0, 1].
    method : str, default "lucene"
        bm25s scoring variant, one of :data:`BM25_METHODS`.
    stopwords : str or None, default "en"
        Stop-word list name, one of :data:`fieldrank._lexical.STOPWORD_LISTS` (``"en"``,
        ``"english"``, ``"de"``, ...: bm25s's lists), or None for no stop-word removal.
    stemmer_language : str or None, default "english"
        PyStemmer (Snowball) algorithm, one of ``Stemmer.algorithms()``, or None for no
        stemming.
    lowercase : bool, default True
        Lower-case text before tokenizing (stop words are matched after this step).
    delta : float, default 0.5
        Additive constant of ``"bm25l"`` and ``"bm25+"``, finite and >= 0; ignored by the
        other methods.
    context_window : int, default 0
        Neighbour-text expansion (module notes): each document is also scored as the
        context document made of itself and its same-session neighbours ``i ± 1 …
        i ± context_window``; 0 switches it off.
    context_weight : float, default 1.0
        Weight of the context-document scores, finite and > 0; used only when
        ``context_window > 0``.

    Raises
    ------
    ValueError, TypeError
        A value out of range, or of the wrong type (a bool for a number, a float for a count),
        by :mod:`fieldrank._validation`'s rules; the message names the field (``BM25Params.k1``).
    """

    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    method: str = DEFAULT_METHOD
    stopwords: str | None = DEFAULT_STOPWORDS
    stemmer_language: str | None = DEFAULT_STEMMER_LANGUAGE
    lowercase: bool = DEFAULT_LOWERCASE
    delta: float = DEFAULT_DELTA
    context_window: int = DEFAULT_CONTEXT_WINDOW
    context_weight: float = DEFAULT_CONTEXT_WEIGHT

    def __post_init__(self) -> None:
        k1 = _v.real(self.k1, "BM25Params.k1", low=0.0, low_open=True)
        b = _v.real(self.b, "BM25Params.b", low=B_MIN, high=B_MAX)
        delta = _v.real(self.delta, "BM25Params.delta", low=0.0)
        _v.one_of(self.method, "BM25Params.method", BM25_METHODS)
        window = _v.integer(self.context_window, "BM25Params.context_window", low=0, note=" (0: no expansion)")
        context_weight = _v.real(self.context_weight, "BM25Params.context_weight", low=0.0, low_open=True)
        object.__setattr__(self, "lowercase", _v.flag(self.lowercase, "BM25Params.lowercase"))
        self._check_stopwords()
        self._check_stemmer_language()
        # Store plain floats so that equality, hashing and JSON round trips are exact.
        object.__setattr__(self, "k1", k1)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "context_window", window)
        object.__setattr__(self, "context_weight", context_weight)

    def _check_stopwords(self) -> None:
        if self.stopwords is None:
            return
        if not isinstance(self.stopwords, str):
            msg = f"BM25Params.stopwords must be a str or None, got {type(self.stopwords).__name__}"
            raise TypeError(msg)
        if self.stopwords not in STOPWORD_LISTS:
            msg = f"BM25Params.stopwords must be one of {tuple(STOPWORD_LISTS)} or None, got {self.stopwords!r}"
            raise ValueError(msg)

    def _check_stemmer_language(self) -> None:
        if self.stemmer_language is None:
            return
        if not isinstance(self.stemmer_language, str):
            msg = (
                "BM25Params.stemmer_language must be a str or None, "
                f"got {type(self.stemmer_language).__name__}"
            )
            raise TypeError(msg)
        algorithms = tuple(Stemmer.algorithms())
        if self.stemmer_language not in algorithms:
            msg = (
                f"BM25Params.stemmer_language must be one of {algorithms} or None, "
                f"got {self.stemmer_language!r}"
            )
            raise ValueError(msg)

    def to_dict(self) -> dict[str, Any]:
        """Return the parameters as a JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25Params:
        """Build validated parameters from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            If a key is unknown or a value is invalid.
        """
        if not isinstance(data, dict):
            msg = f"BM25 params must be a JSON object, got {type(data).__name__}"
            raise ValueError(msg)
        return _v.from_fields(cls, data)


# Its public home, whichever module imported it first (help, reprs, pickles); set after the class is
# made (the dataclass machinery reads the defining module while it builds it).
BM25Params.__module__ = "fieldrank.bm25"

#: The default parameters (k1 = 1.5, b = 0.75, lucene, English stop words and stemmer).
DEFAULT_PARAMS = BM25Params()
