#include "common.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "fieldrank native core: prefilter, CFS-R, CFS, MMR, Ring, weighted RRF, the temporal leg and BM25 scoring.";
    register_info(m);
    register_results(m);
    register_prefilter(m);
    register_cfsr(m);
    register_cfs(m);
    register_mmr(m);
    register_ring(m);
    register_rrf(m);
    register_quantized(m);
    register_temporal(m);
    register_bm25(m);
}
