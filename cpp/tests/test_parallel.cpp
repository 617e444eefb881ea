// parallel_for: every index runs exactly once for any thread count, and an exception thrown by
// a worker thread reaches the caller (the first one wins) instead of terminating the process.
#include <fieldrank/cfs.hpp>
#include <fieldrank/cfsr.hpp>
#include <fieldrank/mmr.hpp>
#include <fieldrank/parallel.hpp>
#include <fieldrank/prefilter.hpp>
#include <fieldrank/quantized.hpp>
#include <fieldrank/ring.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <limits>
#include <memory>
#include <new>
#include <system_error>
#include <stdexcept>
#include <thread>
#include <vector>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

TEST_CASE("parallel_for: every index exactly once for any thread count") {
    for (const Index threads : {Index{-1}, Index{0}, Index{1}, Index{2}, Index{3}, Index{8}, Index{64}}) {
        for (const Index count : {Index{0}, Index{1}, Index{2}, Index{7}, Index{100}}) {
            std::vector<std::atomic<int>> hits(static_cast<std::size_t>(count));
            for (auto& h : hits) h = 0;
            parallel_for(10, 10 + count, threads, [&](Index i) { hits[static_cast<std::size_t>(i - 10)]++; });
            for (const auto& h : hits) CHECK_EQ(h.load(), 1);
        }
    }
    parallel_for(5, 2, 4, [](Index) { throw std::logic_error("an empty range runs nothing"); });
    CHECK(resolve_threads(3) == 3);
    CHECK(resolve_threads(0) >= 1);
    CHECK(resolve_threads(-7) == resolve_threads(0));
}

TEST_CASE("parallel_for: a worker's exception is rethrown on the caller") {
    for (const Index threads : {Index{1}, Index{2}, Index{4}, Index{8}}) {
        std::atomic<Index> ran{0};
        CHECK_THROWS_WITH(parallel_for(0, 1000, threads,
                                       [&](Index i) {
                                           ++ran;
                                           if (i == 37) throw std::invalid_argument("index 37 is bad");
                                       }),
                          std::invalid_argument, "index 37 is bad");
        CHECK(ran.load() >= 1);
        // Every worker fails: still one exception on the caller, no terminate.
        CHECK_THROWS_AS(parallel_for(0, 64, threads, [](Index) { throw std::out_of_range("all bad"); }),
                        std::out_of_range);
    }
    // The throwing index may run on a worker thread other than the caller's.
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> thrown_elsewhere{false};
    try {
        parallel_for(0, 256, 4, [&](Index) {
            if (std::this_thread::get_id() != caller) {
                thrown_elsewhere = true;
                throw std::invalid_argument("from a worker");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
    } catch (const std::invalid_argument& e) {
        CHECK_EQ(std::string(e.what()), std::string("from a worker"));
    }
    CHECK(thrown_elsewhere.load());
}

TEST_CASE("batch operators: a bad corpus row found inside a worker becomes std::invalid_argument") {
    // The batch checks Q up front but E's rows only inside the per-query scoring pass, which
    // runs on the worker threads: the error must cross back to the caller.
    RowMatrixXf E = unit_rows(200, 16, 51);
    E(123, 5) = std::numeric_limits<float>::quiet_NaN();
    const RowMatrixXf Q = unit_rows(32, 16, 52);
    for (const Index threads : {Index{1}, Index{2}, Index{8}}) {
        CHECK_THROWS_WITH(prefilter_batch(E, Q, 10, std::nullopt, threads), std::invalid_argument, "row 123");
        CHECK_THROWS_WITH(cfsr_batch(E, Q, 10, 20, CfsrParams{}, std::nullopt, threads), std::invalid_argument,
                          "E must be finite");
        CHECK_THROWS_WITH(cfs_batch(E, Q, 10, 20, CfsParams{}, std::nullopt, threads), std::invalid_argument, "E");
        CHECK_THROWS_WITH(mmr_batch(E, Q, 10, 20, 0.5, std::nullopt, threads), std::invalid_argument, "E");
        CHECK_THROWS_WITH(ring_batch(E, Q, 10, RingParams{}, std::nullopt, threads), std::invalid_argument, "E");
    }
    E.row(123).setZero();
    CHECK_THROWS_WITH(prefilter_batch(E, Q, 10, std::nullopt, 8), std::invalid_argument, "non-zero");
}

TEST_CASE("batch operators: n_threads near the Index limit is not an overflow") {
    // The scans size their chunks from the thread count (chunks_per_thread · workers); any
    // positive n_threads is accepted, so the arithmetic must not overflow (UBSan reports it).
    const RowMatrixXf E = unit_rows(40, 8, 53);
    const RowMatrixXf Q = unit_rows(3, 8, 54);
    const BatchRanking expected = prefilter_batch(E, Q, 5, std::nullopt, 1);
    const Bf16Corpus QC = quantize_bf16(E);
    for (const Index threads : {std::numeric_limits<Index>::max(), std::numeric_limits<Index>::max() / 2,
                                Index{1} << 61}) {
        CHECK(prefilter_batch(E, Q, 5, std::nullopt, threads).ids == expected.ids);
        CHECK(prefilter_bf16_batch(QC.codes, E, Q, 5, 1000, std::nullopt, threads).ids == expected.ids);
        CHECK(cfs_batch(E, Q, 5, 10, CfsParams{}, std::nullopt, threads).ids.rows() == 3);
    }
}

namespace {

// Starts the first `allowed` workers, then fails as std::thread does under a pids or memory
// limit (or, with `bad_alloc`, as growing the thread list does).
struct FailingStarter {
    Index allowed;
    bool bad_alloc = false;
    std::shared_ptr<std::atomic<Index>> started = std::make_shared<std::atomic<Index>>(0);
    template <typename Work>
    std::thread operator()(Work& work) const {
        if (started->load() >= allowed) {
            if (bad_alloc) throw std::bad_alloc();
            throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                    "pthread_create");
        }
        ++*started;
        return std::thread(work);
    }
};

}  // namespace

TEST_CASE("parallel_for: workers that cannot be started leave the rest to the running threads") {
    // Issue 15: an exception from starting a thread used to destroy the joinable threads
    // already started (std::terminate, exit 134). Now the threads running share the range.
    for (const Index allowed : {Index{0}, Index{1}, Index{3}}) {
        for (const bool bad_alloc : {false, true}) {
            const FailingStarter starter{allowed, bad_alloc};
            std::vector<std::atomic<int>> hits(500);
            for (auto& h : hits) h = 0;
            parallel_for_with(0, 500, 64, [&](Index i) { hits[static_cast<std::size_t>(i)]++; }, starter);
            for (const auto& h : hits) CHECK_EQ(h.load(), 1);
            CHECK_EQ(starter.started->load(), allowed);
            // A worker's exception still reaches the caller when fewer threads run.
            const FailingStarter again{allowed, bad_alloc};
            CHECK_THROWS_WITH(parallel_for_with(0, 500, 64,
                                                [](Index i) {
                                                    if (i == 250) throw std::invalid_argument("index 250 is bad");
                                                },
                                                again),
                              std::invalid_argument, "index 250 is bad");
        }
    }
    // A batch's results do not depend on how many of its workers started.
    const RowMatrixXf E = unit_rows(300, 16, 55);
    const RowMatrixXf Q = unit_rows(40, 16, 56);
    const BatchRanking expected = prefilter_batch(E, Q, 7, std::nullopt, 1);
    std::vector<IdVector> rows(static_cast<std::size_t>(Q.rows()));
    parallel_for_with(0, Q.rows(), 16,
                      [&](Index b) { rows[static_cast<std::size_t>(b)] = prefilter(E, Q.row(b).transpose(), 7).ids; },
                      FailingStarter{2});
    for (Index b = 0; b < Q.rows(); ++b) CHECK(rows[static_cast<std::size_t>(b)] == expected.ids.row(b).transpose());
}
