#include <fieldrank/rrf.hpp>

#include "common.hpp"

namespace {

using IdArray = py::array_t<fieldrank::Index, py::array::c_style | py::array::forcecast>;

// The rankings read in place (no copy into IdVectors, no repeat check): the retriever's trusted path.
fieldrank::FusedRanking rrf_unchecked_arrays(const std::vector<IdArray>& rankings, const std::vector<double>& weights,
                                             fieldrank::Index k, double k0) {
    std::vector<Eigen::Map<const fieldrank::IdVector>> views;
    views.reserve(rankings.size());
    for (const IdArray& ranking : rankings) views.emplace_back(ranking.data(), ranking.size());
    return fieldrank::rrf_unchecked(views, weights, k, k0);
}

}  // namespace

void register_rrf(py::module_& m) {
    using namespace fieldrank;
    m.def("rrf", &rrf, "rankings"_a, "weights"_a, "k"_a, "k0"_a, release_gil(),
          "Weighted RRF of int64 id rankings (best first). Returns NativeFusedRanking of up to k ids.");
    m.def("rrf_batch", &rrf_batch, "rankings"_a, "weights"_a, "k"_a, "k0"_a, "n_threads"_a = 0, release_gil(),
          "rrf for every query's list of rankings. Returns a list of NativeFusedRanking.");
    // The GIL is kept: fusing two short lists takes less time than releasing and re-taking it.
    m.def("rrf_unchecked", &rrf_unchecked_arrays, "rankings"_a, "weights"_a, "k"_a, "k0"_a,
          "rrf without its checks, for callers that guarantee them (one finite weight >= 0 per ranking, "
          "k > 0, k0 >= 0, no id twice in a ranking); C-ordered int64 rankings are read in place, other "
          "integer dtypes or strided views are converted (a copy of that ranking).");
}
