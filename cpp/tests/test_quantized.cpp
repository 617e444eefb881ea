// Reduced-precision prefilter (quantized.hpp): with every candidate rescored (factor · p >= n)
// the result is exactly the fp32 prefilter; the product factor · p saturates instead of
// overflowing; bad arguments throw std::invalid_argument.
#include <fieldrank/prefilter.hpp>
#include <fieldrank/quantized.hpp>

#include <limits>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

namespace {

Ranking bf16(const RowMatrixXf& E, const VectorXf& q, Index p, Index factor, const OptionalIds& subset = std::nullopt) {
    const Bf16Corpus QC = quantize_bf16(E);
    return prefilter_bf16(QC.codes, E, q, p, factor, subset);
}

Ranking int8(const RowMatrixXf& E, const VectorXf& q, Index p, Index factor, const OptionalIds& subset = std::nullopt) {
    const Int8Corpus QC = quantize_int8(E);
    return prefilter_int8(QC.codes, QC.scale, QC.sums, E, q, p, factor, subset);
}

}  // namespace

TEST_CASE("prefilter_quantized: every candidate rescored is the exact fp32 prefilter") {
    const RowMatrixXf E = unit_rows(150, 33, 61);
    const VectorXf q = unit_rows(1, 33, 62).row(0).transpose();
    const IdVector sub = iota_ids(90, 30);
    for (const bool with_subset : {false, true}) {
        const OptionalIds subset = with_subset ? OptionalIds(sub) : std::nullopt;
        const Ranking exact = prefilter(E, q, 20, subset);
        for (const Index factor : {Index{8}, Index{1000}}) {
            const Ranking a = bf16(E, q, 20, factor, subset);
            const Ranking b = int8(E, q, 20, factor, subset);
            CHECK_VEC_EQ(a.ids, exact.ids);
            CHECK_VEC_EQ(a.scores, exact.scores);
            CHECK_VEC_EQ(b.ids, exact.ids);
            CHECK_VEC_EQ(b.scores, exact.scores);
        }
        // factor 1: only the top p of the quantized scan is rescored; still a valid ranking.
        const Ranking rough = int8(E, q, 20, 1, subset);
        CHECK_EQ(rough.ids.size(), 20);
        CHECK(unique_ids(rough.ids));
        CHECK(follows_tie_rule(rough.ids, rough.scores));
    }
}

TEST_CASE("prefilter_quantized: factor * p near the Index limit is not an overflow") {
    // p = 2^31 and factor = 2^40 multiply past 2^63: the candidate count must saturate (UBSan
    // reports the overflow), and the answer is every row, exactly as the fp32 prefilter.
    const RowMatrixXf E = unit_rows(3, 4, 63);
    const VectorXf q = E.row(1).transpose();
    const Ranking exact = prefilter(E, q, 3);
    for (const Index p : {Index{1} << 31, std::numeric_limits<Index>::max()}) {
        for (const Index factor : {Index{1} << 40, std::numeric_limits<Index>::max()}) {
            CHECK_VEC_EQ(bf16(E, q, p, factor).ids, exact.ids);
            CHECK_VEC_EQ(int8(E, q, p, factor).ids, exact.ids);
        }
    }
}

TEST_CASE("prefilter_quantized: bad arguments throw std::invalid_argument") {
    const RowMatrixXf E = unit_rows(10, 4, 64);
    const VectorXf q = E.row(0).transpose();
    CHECK_THROWS_WITH(bf16(E, q, 0, 4), std::invalid_argument, "p");
    CHECK_THROWS_WITH(int8(E, q, 5, 0), std::invalid_argument, "rescore_factor");
    RowMatrixXf bad = E;
    bad(3, 2) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_AS(quantize_bf16(bad), std::invalid_argument);
    CHECK_THROWS_AS(quantize_int8(bad), std::invalid_argument);
    const Int8Corpus QC = quantize_int8(E);
    const VectorXf short_scale = QC.scale.head(3);
    CHECK_THROWS_AS(prefilter_int8(QC.codes, short_scale, QC.sums, E, q, 5, 4), std::invalid_argument);
    const RowMatrixXf other = unit_rows(11, 4, 65);
    CHECK_THROWS_AS(prefilter_int8(QC.codes, QC.scale, QC.sums, other, q, 5, 4), std::invalid_argument);
}
