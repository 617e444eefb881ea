"""The one tokenizer of the lexical leg: corpus, queries and the memory store's rows.

Rules (those of ``bm25s.tokenize``, which the tests hold it to, token for token):

1. lower-case the text (``lowercase=True``);
2. split it with scikit-learn's ``CountVectorizer`` pattern :data:`TOKEN_PATTERN` (words of two or
   more word characters);
3. drop stop words (:func:`stopword_list`; matched after lower-casing, before stemming);
4. stem each token with PyStemmer's Snowball algorithm ``stemmer_language`` (None: no stemming).

Token ids (:meth:`Tokenizer.ids`) are given in order of first occurrence, so a vocabulary is the
same on every run (``bm25s.tokenize`` numbers stemmed tokens by iterating a ``set``, which depends
on the string hash seed; ids never change a score, only where a term's column sits).

The stop-word lists are bm25s's public ``bm25s.stopwords`` constants (from NLTK); the names that
select them are this module's (:data:`STOPWORD_LISTS`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import Stemmer
from bm25s import stopwords as _bm25s_stopwords

__all__ = ["STOPWORD_LISTS", "TOKEN_PATTERN", "Tokenizer", "stopword_list"]

#: scikit-learn CountVectorizer's default token pattern (also bm25s.tokenize's).
TOKEN_PATTERN = r"(?u)\b\w\w+\b"

#: Stop-word list name -> constant of ``bm25s.stopwords`` (the names bm25s.tokenize accepts).
STOPWORD_LISTS: dict[str, str] = {
    **dict.fromkeys(("english", "en"), "STOPWORDS_EN"),
    **dict.fromkeys(("english_plus", "en_plus"), "STOPWORDS_EN_PLUS"),
    **dict.fromkeys(("german", "de"), "STOPWORDS_GERMAN"),
    **dict.fromkeys(("dutch", "nl"), "STOPWORDS_DUTCH"),
    **dict.fromkeys(("french", "fr"), "STOPWORDS_FRENCH"),
    **dict.fromkeys(("spanish", "es"), "STOPWORDS_SPANISH"),
    **dict.fromkeys(("portuguese", "pt"), "STOPWORDS_PORTUGUESE"),
    **dict.fromkeys(("italian", "it"), "STOPWORDS_ITALIAN"),
    **dict.fromkeys(("russian", "ru"), "STOPWORDS_RUSSIAN"),
    **dict.fromkeys(("swedish", "sv"), "STOPWORDS_SWEDISH"),
    **dict.fromkeys(("norwegian", "no"), "STOPWORDS_NORWEGIAN"),
    **dict.fromkeys(("chinese", "zh"), "STOPWORDS_CHINESE"),
    **dict.fromkeys(("turkish", "tr"), "STOPWORDS_TURKISH"),
    **dict.fromkeys(("korean", "ko"), "STOPWORDS_KOREAN"),
    **dict.fromkeys(("danish", "da"), "STOPWORDS_DANISH"),
}

_SPLIT = re.compile(TOKEN_PATTERN).findall


def stopword_list(name: Optional[str]) -> frozenset[str]:
    """The stop words selected by ``name`` (one of :data:`STOPWORD_LISTS`; None: none).

    Raises
    ------
    ValueError
        If ``name`` is not a known list; the message lists the names.
    """
    if name is None:
        return frozenset()
    constant = STOPWORD_LISTS.get(name)
    if constant is None:
        msg = f"stop-word list {name!r} is unknown; known lists: {tuple(STOPWORD_LISTS)} or None"
        raise ValueError(msg)
    return frozenset(getattr(_bm25s_stopwords, constant))


class Tokenizer:
    """Lower-case, split, drop stop words, stem (module notes); built once per index or store.

    Parameters
    ----------
    lowercase : bool
    stopwords : str or None
        A name of :data:`STOPWORD_LISTS`, or None.
    stemmer_language : str or None
        A PyStemmer algorithm (``Stemmer.algorithms()``), or None.

    Thread-safety: PyStemmer's stemmer holds the GIL while it stems, so calls from several
    threads are serialised there; the tokenizer holds no other mutable state.
    """

    __slots__ = ("_lowercase", "_stem", "_stopwords")

    def __init__(self, lowercase: bool, stopwords: Optional[str], stemmer_language: Optional[str]) -> None:
        self._lowercase = bool(lowercase)
        self._stopwords = stopword_list(stopwords)
        self._stem = None if stemmer_language is None else Stemmer.Stemmer(stemmer_language).stemWords

    @classmethod
    def of(cls, params: Any) -> Tokenizer:
        """The tokenizer of a :class:`fieldrank.bm25.BM25Params`."""
        return cls(params.lowercase, params.stopwords, params.stemmer_language)

    def _split(self, texts: Sequence[str]) -> tuple[list[list[str]], dict[str, str]]:
        """Unstemmed tokens of each text and the stem of every distinct token (itself without a stemmer)."""
        lower, stop = self._lowercase, self._stopwords
        split = [[t for t in _SPLIT(text.lower() if lower else text) if t not in stop] for text in texts]
        distinct = list(dict.fromkeys(t for tokens in split for t in tokens))
        stems = distinct if self._stem is None else self._stem(distinct)
        return split, dict(zip(distinct, stems))

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's tokens (stemmed, repeats kept, in text order): the query path, a text at a time
        (a stem depends on its token only, so this equals :meth:`ids`'s stemming of distinct tokens)."""
        lower, stop, stem = self._lowercase, self._stopwords, self._stem
        out = []
        for text in texts:
            tokens = [t for t in _SPLIT(text.lower() if lower else text) if t not in stop]
            out.append(list(stem(tokens)) if stem is not None and tokens else tokens)
        return out

    def ids(self, texts: Sequence[str], vocabulary: dict[str, int]) -> list[np.ndarray]:
        """Each text's tokens as int64 ids into ``vocabulary``; a new token joins it (id = its size).

        ``vocabulary`` is updated in place, new tokens in order of first occurrence.
        """
        split, stem_of = self._split(texts)
        id_of: dict[str, int] = {}
        for token, stem in stem_of.items():
            term = vocabulary.get(stem)
            if term is None:
                term = vocabulary[stem] = len(vocabulary)
            id_of[token] = term
        return [np.fromiter((id_of[t] for t in tokens), dtype=np.int64, count=len(tokens)) for tokens in split]
