#include <fieldrank/memory_fusion.hpp>

#include "common.hpp"

void register_memory(py::module_& m) {
    using namespace fieldrank;
    py::class_<FusionParams>(m, "NativeFusionParams", "Constants of the memory store's fused score.")
        .def(py::init<double, double, double, double, double, double, double, double, double, double, double, double,
                      double, double, std::int8_t>(),
             "sim_floor"_a, "importance_floor"_a, "durable_importance"_a, "importance_boost"_a, "tag_boost"_a,
             "graph_boost"_a, "graph_boost_min"_a, "entity_boost"_a, "valence_weight"_a, "valence_min"_a,
             "valence_max"_a, "strength_min"_a, "strength_max"_a, "storage_min"_a, "core_tier"_a);
    m.attr("FUSED_FACTORS") = static_cast<Index>(kFusedFactors);
    py::tuple names(static_cast<std::size_t>(kFusedFactors));
    for (Index i = 0; i < kFusedFactors; ++i) names[static_cast<std::size_t>(i)] = py::str(kFusedFactorNames[i]);
    m.attr("FUSED_FACTOR_NAMES") = names;
    m.def("memory_relevance_tail", &memory_relevance_tail, "scores"_a.noconvert(), "rows"_a.noconvert(),
          "isolated"_a.noconvert(), "all_isolated"_a, "gamma"_a, "n"_a, "depth"_a, release_gil(),
          "The relevance core's tail: finite scores (m,) float64 of rows (m,) int64 sorted unique below n >= 0; "
          "isolated (positions into rows, int64, or None) or all_isolated=True get s + gamma * max(s, 0). Returns "
          "(by_row (n,) float64, -inf where not a row; the best depth rows, ties to the lower row; their scores).");
    m.def("memory_decay_exponents", &memory_decay_exponents, "rows"_a.noconvert(), "last_access"_a.noconvert(),
          "storage_strength"_a.noconvert(), "at_time"_a, "seconds_per_day"_a, "half_life_days"_a, "storage_min"_a,
          release_gil(),
          "Exponents x (m,) float64 of the retrieval strength 2^x of rows (m,) int64: "
          "-(max(at_time - last_access, 0) / seconds_per_day / half_life_days) / max(S, storage_min).");
    m.def("memory_fuse", &memory_fuse, "rows"_a.noconvert(), "relevance_by_row"_a.noconvert(),
          "importance"_a.noconvert(), "storage_strength"_a.noconvert(), "tier_codes"_a.noconvert(),
          "valence"_a.noconvert(), "decay"_a.noconvert(), "activation"_a.noconvert(), "params"_a,
          "cosine"_a.noconvert() = py::none(), "tag_containment"_a.noconvert() = py::none(),
          "entity_containment"_a.noconvert() = py::none(), "other_entity"_a.noconvert() = py::none(),
          "cue_valence"_a = py::none(), release_gil(),
          "Every factor and the fused score of the candidate rows (m,) int64 over (n,) float64 / int8 columns; "
          "decay (2^exponent), activation, cosine (None: the cosine and sim rows are NaN), tag/entity containment "
          "(None: 0) and other_entity (bool, None: none) per candidate; cue_valence None: V = 1. Returns "
          "((FUSED_FACTORS, m) float64 factors, one per row in FUSED_FACTOR_NAMES order, durable (m,) bool).");
    m.def("memory_protected_order", &memory_protected_order, "candidates"_a.noconvert(),
          "relevance_by_row"_a.noconvert(), "tier_rows"_a.noconvert(), "tier_z"_a.noconvert(), release_gil(),
          "The protected tier's order: candidates (m,) int64 sorted unique rows by memory-side z (tier_z (t,) "
          "float64 of the sorted unique tier_rows (t,) int64; +inf for a candidate not among them) and by "
          "relevance_by_row (n,) float64, best first, ties to the lower row, interleaved keeping first places; "
          "a NaN z or relevance is refused. Returns (interleaved rows, rows by z, their z).");
    m.def("memory_sorted_unique", &memory_sorted_unique, "rows"_a.noconvert(), release_gil(),
          "Sorted unique values of rows (m,) int64.");
    m.def("memory_reserve_slots", &memory_reserve_slots, "order"_a.noconvert(), "chosen"_a.noconvert(), "k"_a,
          release_gil(),
          "The reserved share of k >= 1: order (m,) int64, each position of 0 .. m - 1 once, best first; chosen "
          "(c,) int64 distinct positions best first that must end in the top k. Returns (the new order, the "
          "positions that entered).");
    m.def("memory_ranks_of", &memory_ranks_of, "wanted"_a.noconvert(), "admitted"_a.noconvert(), release_gil(),
          "1-based rank of each of wanted (k,) int64 in admitted (m,) int64 (best first); 0: not admitted.");
}
