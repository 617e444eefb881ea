// parallel_for after hnswlib's ParallelFor: an atomic work index over std::threads, with the
// first exception of any worker rethrown on the calling thread, and fewer workers when the
// system cannot start as many as asked.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
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

// Starts one worker thread running `work`; parallel_for's default way of starting one.
struct StartStdThread {
    template <typename Work>
    std::thread operator()(Work& work) const {
        return std::thread(work);
    }
};

// Calls fn(i) once for every i in [begin, end). Each index runs on exactly one thread, so
// results written per index are identical for any thread count.
//
// A worker that cannot be started (std::system_error from std::thread under a pids or memory
// limit, or std::bad_alloc growing the thread list) is not an error: the indices are handed
// out by one atomic counter, so the threads already running and the calling thread do the
// whole range, with the same results as with every thread. Every thread that was started is
// joined before this returns or rethrows, so no std::thread is ever destroyed while joinable
// (which would std::terminate the process). `start_thread(work)` returns a started
// std::thread; tests pass one that fails to check the fallback.
template <typename Function, typename StartThread>
void parallel_for_with(Index begin, Index end, Index n_threads, Function fn, StartThread start_thread) {
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
    for (Index t = 0; t + 1 < workers; ++t) {
        try {
            threads.push_back(start_thread(work));
        } catch (const std::system_error&) {
            break;  // no more threads: the ones running and this one share the rest
        } catch (const std::bad_alloc&) {
            break;
        }
    }
    work();
    for (auto& thread : threads) thread.join();
    if (first_error) std::rethrow_exception(first_error);
}

template <typename Function>
void parallel_for(Index begin, Index end, Index n_threads, Function fn) {
    parallel_for_with(begin, end, n_threads, fn, StartStdThread{});
}

}  // namespace fieldrank
