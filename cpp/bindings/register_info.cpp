#include <fieldrank/defaults.hpp>
#include <fieldrank/parallel.hpp>

#include "common.hpp"

#ifndef FIELDRANK_COMPILER
#define FIELDRANK_COMPILER "unknown"
#endif
#ifndef FIELDRANK_CXX_FLAGS
#define FIELDRANK_CXX_FLAGS "unknown"
#endif
#ifndef FIELDRANK_BUILD_TYPE
#define FIELDRANK_BUILD_TYPE "unknown"
#endif

void register_info(py::module_& m) {
    py::dict table;
    for (const auto& entry : fieldrank::default_table()) {
        if (entry.is_integer)
            table[entry.name] = entry.int_value;
        else
            table[entry.name] = entry.real_value;
    }
    m.attr("DEFAULTS") = table;

    py::dict info;
    info["compiler"] = FIELDRANK_COMPILER;
    info["cxx_flags"] = FIELDRANK_CXX_FLAGS;
    info["build_type"] = FIELDRANK_BUILD_TYPE;
    info["eigen_version"] = std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                            std::to_string(EIGEN_MINOR_VERSION);
    m.attr("BUILD_INFO") = info;

    m.def("hardware_threads", &fieldrank::resolve_threads, "n_threads"_a = 0,
          "Threads a call with this n_threads uses (0 or less: all cores).");
}
