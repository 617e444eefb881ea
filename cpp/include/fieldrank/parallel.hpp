// parallel_for after hnswlib's ParallelFor: an atomic work index over std::threads, with the
// first exception of any worker rethrown on the calling thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "defaults.hpp"
#include "types.hpp"

namespace fieldrank {

inline Index resolve_threads(Index n_threads) {
    if (n_threads > 0) return n_threads;
    const unsigned hardware = std::thread::hardware_concurrency();
    return hardware == 0 ? 1 : static_cast<Index>(hardware);
}

// Calls fn(i) once for every i in [begin, end). Each index runs on exactly one thread, so
// results written per index are identical for any thread count.
template <typename Function>
void parallel_for(Index begin, Index end, Index n_threads, Function fn) {
    const Index count = end - begin;
    if (count <= 0) return;
    const Index workers = std::min<Index>(resolve_threads(n_threads), count);
    if (workers <= 1 || count < defaults::parallel_min_batch) {
        for (Index i = begin; i < end; ++i) fn(i);
        return;
    }
    std::atomic<Index> next{begin};
    std::exception_ptr first_error = nullptr;
    std::mutex error_mutex;
    auto work = [&]() {
        while (true) {
            const Index i = next.fetch_add(1);
            if (i >= end) break;
            try {
                fn(i);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!first_error) first_error = std::current_exception();
                next = end;  // stop handing out work once one index failed
            }
        }
    };
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(workers - 1));
    for (Index t = 0; t + 1 < workers; ++t) threads.emplace_back(work);
    work();
    for (auto& thread : threads) thread.join();
    if (first_error) std::rethrow_exception(first_error);
}

}  // namespace fieldrank
