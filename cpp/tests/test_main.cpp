// Runner of the C++ core tests: every TEST_CASE in this executable, in registration order, or
// only those whose name contains argv[1]. Prints one line per case and the plain closing line
// "N passed, N failed"; exits non-zero on any failure. The SIMD kernel variant is the one
// FIELDRANK_KERNEL names (else the best this CPU runs); `--list-variants` prints the variants
// this CPU supports, one per line, so a script can run the tests under each.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <fieldrank/simd.hpp>

#include "check.hpp"

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--list-variants") == 0) {
        for (const auto& name : fieldrank::simd::supported_variants()) std::printf("%s\n", name.c_str());
        return 0;
    }
    const char* requested = std::getenv("FIELDRANK_KERNEL");
    if (requested != nullptr && requested[0] != '\0') {
        try {
            fieldrank::simd::set_kernel_variant(requested);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "FIELDRANK_KERNEL=%s: %s\n", requested, e.what());
            return 2;
        }
    }
    std::printf("kernel variant: %s\n", fieldrank::simd::kernel_variant().c_str());
    const char* filter = argc > 1 ? argv[1] : nullptr;
    int passed = 0, failed = 0;
    for (const auto& test : fieldrank_test::registry()) {
        if (filter && std::strstr(test.name, filter) == nullptr) continue;
        fieldrank_test::failures() = 0;
        try {
            test.body();
        } catch (const fieldrank_test::Stop&) {
            // REQUIRE already reported the failure.
        } catch (const std::exception& e) {
            fieldrank_test::report(__FILE__, __LINE__, std::string("unexpected exception: ") + e.what());
        } catch (...) {
            fieldrank_test::report(__FILE__, __LINE__, "unexpected non-standard exception");
        }
        if (fieldrank_test::failures() == 0) {
            ++passed;
            std::printf("ok    %s\n", test.name);
        } else {
            ++failed;
            std::printf("FAIL  %s (%d checks)\n", test.name, fieldrank_test::failures());
        }
        std::fflush(stdout);
    }
    std::printf("fieldrank_tests: %d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
