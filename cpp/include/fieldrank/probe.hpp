// Read-bandwidth probe: streams an array once with the active kernel variant's widest loads,
// split into contiguous chunks across threads. Benchmarks report the prefilter's GB/s next to
// this machine's figure from the same run.
#pragma once

#include <vector>

#include "errors.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "types.hpp"

namespace fieldrank {

// Σ of every element of x (n floats), read by n_threads threads; the sum keeps the reads alive.
inline double read_probe(const float* x, Index n, Index n_threads) {
    if (n <= 0) fail("the probe array must hold at least one element, got ", n);
    const simd::KernelTable& kernels = simd::kernels();
    const Index workers = std::max<Index>(1, std::min<Index>(resolve_threads(n_threads), n));
    const Index chunk = (n + workers - 1) / workers;
    std::vector<double> partial(static_cast<std::size_t>(workers), 0.0);
    parallel_for(0, workers, workers, [&](Index t) {
        const Index begin = t * chunk;
        const Index end = std::min(n, begin + chunk);
        if (begin < end) partial[static_cast<std::size_t>(t)] = kernels.read_sum(x + begin, end - begin);
    });
    double total = 0.0;
    for (const double value : partial) total += value;
    return total;
}

}  // namespace fieldrank
