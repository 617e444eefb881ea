// splitmix64: the deterministic hash behind Ring's seeded tie draw and CFS-R's restart vector.
#pragma once

#include <cstdint>

namespace fieldrank {

// splitmix64's finaliser; the numpy reference implements the same arithmetic on uint64.
inline std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

}  // namespace fieldrank
