"""Uncertainty and paired comparisons over per-question scores (docs/spec.md §9).

- :func:`bootstrap_ci`: percentile bootstrap interval for the mean over questions.
- :func:`paired_bootstrap`: percentile bootstrap of the mean per-question difference
  between two methods, with a two-sided bootstrap p-value.
- :func:`mcnemar`: McNemar's test on paired binary outcomes (e.g. hit@k), with the
  exact binomial p-value.

Resampling
----------
Every bootstrap draws ``n_resamples`` index vectors of length ``n`` (questions, with
replacement) from ``numpy.random.default_rng(seed)``. Each resample's mean is computed
as ``counts @ values / n``, where ``counts[r, i]`` is how often question ``i`` was drawn
in resample ``r``. The draws are made in chunks whose row count depends on ``n`` only
(at most :data:`RESAMPLE_CHUNK_ELEMENTS` indices per chunk), so memory stays bounded
and, for a given ``(n, seed, n_resamples)``, the resamples are the same whether one
column or many columns of ``values`` are passed. Passing a ``(n, m)`` matrix evaluates
``m`` methods (or metrics) on the *same* resamples in one matrix product; that is the
fast path for tables of many methods.

The specification (docs/spec.md §9) asks for at least 2,000 resamples; :func:`bootstrap_ci` and
:func:`paired_bootstrap` refuse fewer unless ``enforce_minimum=False`` (meant for quick
experiments and tests only).
"""

from __future__ import annotations

from typing import Final, NamedTuple, Union

import numpy as np

from .. import _validation as _v

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_SEED",
    "MIN_BOOTSTRAP_RESAMPLES",
    "RESAMPLE_CHUNK_ELEMENTS",
    "BootstrapCI",
    "McNemarResult",
    "PairedBootstrapResult",
    "bootstrap_ci",
    "bootstrap_means",
    "mcnemar",
    "paired_bootstrap",
]

MIN_BOOTSTRAP_RESAMPLES: Final[int] = 2000
"""Smallest number of bootstrap resamples the specification (docs/spec.md §9) allows for a reported interval."""

DEFAULT_CONFIDENCE: Final[float] = 0.95
"""Two-sided coverage of reported intervals."""

DEFAULT_SEED: Final[int] = 0
"""Seed used when the caller gives none, so every report is reproducible."""

RESAMPLE_CHUNK_ELEMENTS: Final[int] = 2_000_000
"""Upper bound on the number of drawn indices held in memory at once (rows × n)."""

MCNEMAR_NULL_PROBABILITY: Final[float] = 0.5
"""Under H0 a discordant pair favours either method with probability 1/2."""

MCNEMAR_CONTINUITY_CORRECTION: Final[float] = 1.0
"""Edwards' continuity correction in the chi-square form ``(|b - c| - 1)^2 / (b + c)``."""

MCNEMAR_DEGREES_OF_FREEDOM: Final[int] = 1

Number = Union[float, np.ndarray]


class BootstrapCI(NamedTuple):
    """Point estimate and percentile interval of a mean.

    Fields are floats for 1-D input and arrays of shape ``(m,)`` for ``(n, m)`` input.
    """

    mean: Number
    lo: Number
    hi: Number


class PairedBootstrapResult(NamedTuple):
    """Mean of ``a - b`` over questions, its percentile interval and a two-sided p-value."""

    mean_diff: Number
    lo: Number
    hi: Number
    p_value: Number


class McNemarResult(NamedTuple):
    """McNemar's test on paired binary outcomes.

    Attributes
    ----------
    b : int
        Questions where method A hits and method B misses.
    c : int
        Questions where method A misses and method B hits.
    statistic : float
        Continuity-corrected chi-square statistic ``(|b - c| - 1)^2 / (b + c)``
        (0 when ``b + c == 0`` or ``|b - c| <= 1``).
    p_value : float
        Exact two-sided binomial p-value, ``binomtest(b, b + c, 0.5)``.
    p_value_chi2 : float
        Asymptotic p-value of ``statistic`` under chi-square with 1 degree of freedom,
        for reference only.
    """

    b: int
    c: int
    statistic: float
    p_value: float
    p_value_chi2: float


# --------------------------------------------------------------------------- helpers
def _as_values(values: np.ndarray, name: str) -> tuple[np.ndarray, bool]:
    """Return ``values`` as a float64 ``(n, m)`` matrix and whether it was 1-D."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim not in (1, 2):
        msg = f"{name} must be 1-D (n,) or 2-D (n, m), got shape {array.shape}"
        raise ValueError(msg)
    if array.shape[0] == 0:
        msg = f"{name} is empty: a bootstrap needs at least one question"
        raise ValueError(msg)
    if not np.isfinite(array).all():
        msg = f"{name} contains NaN or inf"
        raise ValueError(msg)
    was_vector = array.ndim == 1
    return (array[:, None] if was_vector else array), was_vector


def _check_resampling(n_resamples: int, confidence: float, enforce_minimum: bool) -> None:
    _v.integer(n_resamples, "n_resamples", low=1)
    if enforce_minimum and n_resamples < MIN_BOOTSTRAP_RESAMPLES:
        msg = (
            f"n_resamples={n_resamples} is below the protocol minimum of "
            f"{MIN_BOOTSTRAP_RESAMPLES}; pass enforce_minimum=False for a quick, "
            "non-reportable estimate"
        )
        raise ValueError(msg)
    _v.real(confidence, "confidence", low=0.0, high=1.0, low_open=True, high_open=True)


def _unwrap(array: np.ndarray, was_vector: bool) -> Number:
    return float(array[0]) if was_vector else array


def bootstrap_means(
    values: np.ndarray, n_resamples: int = MIN_BOOTSTRAP_RESAMPLES, seed: int = DEFAULT_SEED
) -> np.ndarray:
    """Means of ``values`` over bootstrap resamples of its rows.

    Parameters
    ----------
    values : numpy.ndarray
        Shape ``(n,)`` or ``(n, m)``: one row per question, one column per method.
    n_resamples : int, default 2000
        Number of resamples (no minimum enforced here).
    seed : int, default 0
        Seed for ``numpy.random.default_rng``.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(n_resamples, m)`` (``m = 1`` for 1-D input).
    """
    matrix, _ = _as_values(values, "values")
    _check_resampling(n_resamples, DEFAULT_CONFIDENCE, enforce_minimum=False)
    n_questions = matrix.shape[0]
    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, RESAMPLE_CHUNK_ELEMENTS // n_questions)
    means = np.empty((n_resamples, matrix.shape[1]), dtype=np.float64)
    for start in range(0, n_resamples, rows_per_chunk):
        stop = min(start + rows_per_chunk, n_resamples)
        n_rows = stop - start
        drawn = rng.integers(0, n_questions, size=(n_rows, n_questions))
        row_offsets = (np.arange(n_rows) * n_questions)[:, None]
        counts = np.bincount((drawn + row_offsets).ravel(), minlength=n_rows * n_questions)
        counts = counts.reshape(n_rows, n_questions).astype(np.float64)
        means[start:stop] = counts @ matrix / n_questions
    return means


def _percentile_interval(boot: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(boot, [tail, 1.0 - tail], axis=0)
    return lo, hi


# ------------------------------------------------------------------------ public API
def bootstrap_ci(
    values: np.ndarray,
    n_resamples: int = MIN_BOOTSTRAP_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
    *,
    enforce_minimum: bool = True,
) -> BootstrapCI:
    """Percentile bootstrap interval for the mean over questions.

    Parameters
    ----------
    values : numpy.ndarray
        Per-question scores, shape ``(n,)``, or ``(n, m)`` for ``m`` methods scored on
        the same resamples.
    n_resamples : int, default 2000
        Number of resamples; at least :data:`MIN_BOOTSTRAP_RESAMPLES` unless
        ``enforce_minimum=False``.
    confidence : float, default 0.95
        Two-sided coverage; the interval is the ``(1 - confidence) / 2`` and
        ``(1 + confidence) / 2`` quantiles (numpy's default linear interpolation) of the
        resampled means.
    seed : int, default 0
        Seed for ``numpy.random.default_rng``.
    enforce_minimum : bool, default True
        Refuse ``n_resamples`` below the protocol minimum.

    Returns
    -------
    BootstrapCI
        ``(mean, lo, hi)``; ``mean`` is the sample mean of ``values`` (not the mean of
        the resampled means).
    """
    _check_resampling(n_resamples, confidence, enforce_minimum)
    matrix, was_vector = _as_values(values, "values")
    boot = bootstrap_means(matrix, n_resamples, seed)
    lo, hi = _percentile_interval(boot, confidence)
    mean = matrix.mean(axis=0)
    return BootstrapCI(
        _unwrap(mean, was_vector), _unwrap(lo, was_vector), _unwrap(hi, was_vector)
    )


def paired_bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    n_resamples: int = MIN_BOOTSTRAP_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_SEED,
    *,
    enforce_minimum: bool = True,
) -> PairedBootstrapResult:
    """Paired bootstrap of the mean per-question difference ``a - b``.

    Questions are resampled together, so both methods are always evaluated on the
    same questions.

    Parameters
    ----------
    a, b : numpy.ndarray
        Per-question scores of two methods on the same questions in the same order,
        shape ``(n,)`` or ``(n, m)`` (``m`` comparisons on the same resamples).
    n_resamples, seed, enforce_minimum
        As :func:`bootstrap_ci`.
    confidence : float, default 0.95
        Two-sided coverage of the percentile interval of the difference.

    Returns
    -------
    PairedBootstrapResult
        ``(mean_diff, lo, hi, p_value)``.

    Notes
    -----
    With ``B`` resampled mean differences ``d*``, the two-sided p-value is

    ``p = min(1, 2 * min((1 + #{d* <= 0}) / (B + 1), (1 + #{d* >= 0}) / (B + 1)))``

    i.e. twice the smaller bootstrap tail mass at zero, with the ``+1`` correction
    that keeps ``p > 0`` (its smallest value is ``2 / (B + 1)``). It is the p-value
    obtained by inverting the percentile interval: ``p < 1 - confidence`` exactly when
    the interval excludes 0 (up to quantile interpolation). Identical inputs give
    ``mean_diff = 0`` and ``p = 1``.
    """
    _check_resampling(n_resamples, confidence, enforce_minimum)
    matrix_a, was_vector = _as_values(a, "a")
    matrix_b, _ = _as_values(b, "b")
    if matrix_a.shape != matrix_b.shape:
        msg = f"a and b must have the same shape, got {np.shape(a)} and {np.shape(b)}"
        raise ValueError(msg)
    differences = matrix_a - matrix_b
    boot = bootstrap_means(differences, n_resamples, seed)
    lo, hi = _percentile_interval(boot, confidence)
    at_or_below = ((boot <= 0.0).sum(axis=0) + 1) / (n_resamples + 1)
    at_or_above = ((boot >= 0.0).sum(axis=0) + 1) / (n_resamples + 1)
    p_value = np.minimum(1.0, 2.0 * np.minimum(at_or_below, at_or_above))
    mean_diff = differences.mean(axis=0)
    return PairedBootstrapResult(
        _unwrap(mean_diff, was_vector),
        _unwrap(lo, was_vector),
        _unwrap(hi, was_vector),
        _unwrap(p_value, was_vector),
    )


def _as_binary(outcomes: np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(outcomes)
    if array.ndim != 1:
        msg = f"{name} must be 1-D, got shape {array.shape}"
        raise ValueError(msg)
    if array.dtype != np.bool_:
        if not np.isin(array, (0, 1)).all():
            msg = f"{name} must hold only 0/1 or booleans"
            raise ValueError(msg)
        array = array.astype(bool)
    return array


def mcnemar(hit_a: np.ndarray, hit_b: np.ndarray) -> McNemarResult:
    """McNemar's test for two methods' paired binary outcomes (e.g. hit@10).

    Parameters
    ----------
    hit_a, hit_b : numpy.ndarray
        Shape ``(n,)``, bool or 0/1, one entry per question in the same order.

    Returns
    -------
    McNemarResult
        ``(b, c, statistic, p_value, p_value_chi2)``; ``b`` counts A-hit/B-miss and
        ``c`` counts A-miss/B-hit.

    Notes
    -----
    Only the ``b + c`` discordant questions carry information. Under H0 (equal hit
    rates) ``b ~ Binomial(b + c, 1/2)``, and ``p_value`` is the exact two-sided
    binomial test (``scipy.stats.binomtest``), which is exact for any ``b + c`` and
    is therefore the one to report, in particular when ``b + c`` is small (roughly
    below 25), where the chi-square approximation is poor. The continuity-corrected
    chi-square statistic and its asymptotic p-value are returned for reference. With
    no discordant pair, ``statistic = 0`` and both p-values are 1.
    """
    a = _as_binary(hit_a, "hit_a")
    b_hits = _as_binary(hit_b, "hit_b")
    if a.shape != b_hits.shape:
        msg = f"hit_a and hit_b must have the same shape, got {a.shape} and {b_hits.shape}"
        raise ValueError(msg)
    only_a = int(np.count_nonzero(a & ~b_hits))
    only_b = int(np.count_nonzero(~a & b_hits))
    n_discordant = only_a + only_b
    if n_discordant == 0:
        return McNemarResult(only_a, only_b, 0.0, 1.0, 1.0)
    from scipy import stats as scipy_stats  # deferred: scipy.stats is slow to import

    corrected = max(abs(only_a - only_b) - MCNEMAR_CONTINUITY_CORRECTION, 0.0)
    statistic = corrected**2 / n_discordant
    p_exact = scipy_stats.binomtest(
        only_a, n_discordant, MCNEMAR_NULL_PROBABILITY, alternative="two-sided"
    ).pvalue
    p_chi2 = scipy_stats.chi2.sf(statistic, MCNEMAR_DEGREES_OF_FREEDOM)
    return McNemarResult(only_a, only_b, float(statistic), float(p_exact), float(p_chi2))
