"""fieldrank: fast in-process retrieval over long conversational memory.

The operators (prefilter, CFS-R, CFS, MMR, Ring, weighted RRF) run in a C++/Eigen core; their
numpy twins live in :mod:`fieldrank.reference`. ``DEFAULTS`` is the core's table of defaults.
"""

from __future__ import annotations

from . import _kernels
from ._results import Ranking, Reconstruction
from . import operators as _operators
from .operators import *  # noqa: F403 - the operators (operators.__all__) are the package's own names
from .quantized import QuantizedCorpus

__version__ = "0.1.0"

DEFAULTS = dict(_kernels.DEFAULTS)


def build_info() -> dict:
    """Compiler, flags, Eigen version and kernel variant of the native core.

    ``kernel_variant`` is the SIMD variant in use: the best one this CPU runs (CPUID check at
    import), or the one named by the ``FIELDRANK_KERNEL`` environment variable, or the last
    ``fieldrank._core.set_kernel_variant(name)``. ``variant_flags`` lists each compiled variant's
    compiler flags; ``cxx_flags`` are the flags of everything else.
    """
    info = dict(_kernels.build_info())
    info["variant_flags"] = info["variant_flags"].splitlines()
    info["kernel_variant"] = _kernels.kernel_variant()
    info["compiled_kernel_variants"] = list(_kernels.compiled_kernel_variants())
    info["supported_kernel_variants"] = list(_kernels.supported_kernel_variants())
    info["cpu_features"] = _kernels.cpu_features()
    return info


def tie_key(seed: int, lap: int, ids):
    """Ring's seeded tie draw for each id (same values as :func:`fieldrank.reference.tie_key`).

    ``seed`` and ``lap`` are checked like Ring's seed: ints in [0, 2**64) (``TypeError`` for a
    non-int, ``ValueError`` out of range), alike in both modules.
    """
    import numpy as np

    from . import _validation

    seed, lap = _validation.tie_key_args(seed, lap)
    lap_bits = _validation.as_int64_bits(lap)  # the core casts lap and ids to uint64: same bits
    return np.array([_kernels.tie_key(seed, lap_bits, _validation.as_int64_bits(int(i)))
                     for i in _validation.tie_key_ids(ids)], dtype=np.uint64)


# Heavier layers load on first use so that `import fieldrank` stays fast.
_LAZY = {
    "HybridRetriever": ".hybrid",
    "SearchResult": ".hybrid",
    "SearchHit": ".hybrid",
    "LegHits": ".hybrid",
    "RetrieverConfig": ".config",
    "CosineLeg": ".config",
    "BM25Leg": ".config",
    "CFSRLeg": ".config",
    "CFSLeg": ".config",
    "MMRLeg": ".config",
    "RingLeg": ".config",
    "PRESET_NAMES": ".config",
    "preset": ".config",
    "IndexFormatError": ".persistence",
    "MemoryStore": ".memory",
}

__all__ = [
    "DEFAULTS", "Ranking", "Reconstruction", "build_info", "tie_key", "QuantizedCorpus",
    # lazy (see _LAZY): the hybrid retriever and its configuration
    "HybridRetriever", "SearchResult", "SearchHit", "LegHits", "RetrieverConfig", "CosineLeg", "BM25Leg", "CFSRLeg",
    "CFSLeg", "MMRLeg", "RingLeg", "PRESET_NAMES", "preset", "IndexFormatError",
]
# The operators' names are written once, in operators.__all__.
__all__ += _operators.__all__


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name], __name__)
        return getattr(module, name)
    msg = f"module 'fieldrank' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__():
    return sorted(set(__all__) | set(_LAZY))
