#include <fieldrank/defaults.hpp>
#include <fieldrank/parallel.hpp>
#include <fieldrank/probe.hpp>
#include <fieldrank/simd.hpp>

#include <pybind11/typing.h>

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

    // A function, not a module attribute: the stub generator writes an attribute's value into
    // _core.pyi, and this one differs between machines (compiler, flags).
    m.def(
        "build_info",
        [] {
            py::typing::Dict<py::str, py::str> info;
            info["compiler"] = FIELDRANK_COMPILER;
            info["cxx_flags"] = FIELDRANK_CXX_FLAGS;
            info["build_type"] = FIELDRANK_BUILD_TYPE;
            info["eigen_version"] = std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) +
                                    "." + std::to_string(EIGEN_MINOR_VERSION);
            std::string flags;  // one "variant: flags" line per compiled kernel variant
            for (const auto& line : fieldrank::simd::variant_flags()) flags += (flags.empty() ? "" : "\n") + line;
            info["variant_flags"] = flags;
            return info;
        },
        "Compiler, flags of every kernel variant, build type and Eigen version of this binary.");

    // The kernel variant is chosen here, at import: the best one this CPU runs, or FIELDRANK_KERNEL.
    fieldrank::simd::initialize_kernels();
    m.def("kernel_variant", &fieldrank::simd::kernel_variant, "Name of the kernel variant in use.");
    m.def("set_kernel_variant", &fieldrank::simd::set_kernel_variant, "variant"_a,
          "Switch the kernel variant for every later call (ValueError if unknown or not runnable here).");
    m.def("compiled_kernel_variants", &fieldrank::simd::compiled_variants, "Kernel variants in this build.");
    m.def("supported_kernel_variants", &fieldrank::simd::supported_variants,
          "Kernel variants this build contains and this CPU can run, best last.");
    m.def("cpu_features", &fieldrank::simd::cpu_features, "CPU features the dispatcher detected.");
    m.def(
        "read_probe",
        [](const Eigen::Ref<const Eigen::VectorXf>& x, fieldrank::Index n_threads) {
            return fieldrank::read_probe(x.data(), x.size(), n_threads);
        },
        "x"_a.noconvert(), "n_threads"_a = 1, release_gil(),
        "Sum of x (float32, contiguous) read once by n_threads threads: time it for the read bandwidth.");

    m.def("hardware_threads", &fieldrank::resolve_threads, "n_threads"_a = 0,
          "Threads a call with this n_threads uses (0 or less: all cores).");
}
