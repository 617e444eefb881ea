// Umbrella header: every operator family of the fieldrank core.
#pragma once

#include "bm25.hpp"
#include "cfs.hpp"
#include "cfsr.hpp"
#include "defaults.hpp"
#include "memory_fusion.hpp"
#include "mmr.hpp"
#include "prefilter.hpp"
#include "quantized.hpp"
#include "ring.hpp"
#include "rrf.hpp"
#include "temporal.hpp"
#include "types.hpp"
