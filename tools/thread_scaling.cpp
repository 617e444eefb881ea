// Thread scaling of the batch operators, without Python: prefilter_batch (16 queries) and
// cfsr_batch (64 queries) with 1, 2 and 4 threads, and the read-bandwidth probe, interleaved
// round by round. Build (static, to run on another machine):
//   g++ -O3 -std=c++17 -ffp-contract=off -static -pthread -Icpp/include -I<eigen> \
//       tools/thread_scaling.cpp build/<tag>/libfieldrank_core.a -o thread_scaling
#include <fieldrank/fieldrank.hpp>
#include <fieldrank/probe.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

using namespace fieldrank;

static RowMatrixXf unit_rows(Index n, Index d, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal;
    RowMatrixXf X(n, d);
    for (Index i = 0; i < n; ++i) {
        for (Index j = 0; j < d; ++j) X(i, j) = normal(gen);
        X.row(i).normalize();
    }
    return X;
}

template <typename F>
static double seconds(F f) {
    const auto a = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename F>
static void scaling(const char* name, F run, int rounds) {
    const Index threads[] = {1, 2, 4};
    std::vector<double> t[3];
    for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < 3; ++i) t[i].push_back(seconds([&] { run(threads[(i + r) % 3]); }));
    // t[i] holds rounds of mixed thread counts; regroup by thread count
    std::vector<double> by[3];
    for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < 3; ++i) by[(i + r) % 3].push_back(t[i][static_cast<std::size_t>(r)]);
    std::printf("%-34s 1 thr %8.2f ms | 2 thr %8.2f ms (x%.2f) | 4 thr %8.2f ms (x%.2f)\n", name, median(by[0]) * 1e3,
                median(by[1]) * 1e3, median(by[0]) / median(by[1]), median(by[2]) * 1e3, median(by[0]) / median(by[2]));
    std::fflush(stdout);
}

int main() {
    std::printf("kernel variant %s, hardware threads %u, cpu: %s\n", simd::kernel_variant().c_str(),
                std::thread::hardware_concurrency(), simd::cpu_features().c_str());
    {
        std::vector<float> big(static_cast<std::size_t>(512) << 18, 1.0f);  // 512 MiB
        scaling("read probe 512 MiB", [&](Index t) { volatile double s = read_probe(big.data(), big.size(), t); (void)s; }, 7);
    }
    for (Index n : {100000, 1000000}) {
        const RowMatrixXf E = unit_rows(n, 384, 1);
        RowMatrixXf Q = unit_rows(16, 384, 2);
        char name[64];
        std::snprintf(name, sizeof name, "prefilter_batch N=%ld B=16", static_cast<long>(n));
        scaling(name, [&](Index t) { auto r = prefilter_batch(E, Q, 150, std::nullopt, t); (void)r; }, 7);
    }
    {
        const RowMatrixXf E = unit_rows(20000, 384, 3);
        RowMatrixXf Q = unit_rows(64, 384, 4);
        scaling("cfsr_batch N=20k B=64", [&](Index t) { auto r = cfsr_batch(E, Q, 50, 150, CfsrParams{}, std::nullopt, t); (void)r; }, 7);
        const RowMatrixXf S = unit_rows(600, 768, 5);
        RowMatrixXf Q2 = unit_rows(200, 768, 6);
        IdVector sub(600);
        for (Index i = 0; i < 600; ++i) sub[i] = i;
        scaling("cfsr_batch subset 600x768 B=200", [&](Index t) {
            auto r = cfsr_batch(S, Q2, 50, 150, CfsrParams{}, OptionalIds(IdRef(sub)), t); (void)r; }, 7);
    }
    return 0;
}
