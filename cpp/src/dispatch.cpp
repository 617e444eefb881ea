// Runtime choice of the kernel variant: a CPUID check (plus XGETBV, so that the OS is known to
// save the ymm/zmm state) decides which variants this CPU can run; the best one is taken unless
// FIELDRANK_KERNEL names another. Compiled with the baseline flags.
#include <fieldrank/simd.hpp>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// FIELDRANK_NO_CPUID compiles the non-x86 branch on x86 too (to check it builds).
#if (defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)) && !defined(FIELDRANK_NO_CPUID)
#define FIELDRANK_X86 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#else
#define FIELDRANK_X86 0
#endif

#ifndef FIELDRANK_HAVE_AVX2
#define FIELDRANK_HAVE_AVX2 0
#endif
#ifndef FIELDRANK_HAVE_AVX512
#define FIELDRANK_HAVE_AVX512 0
#endif
#ifndef FIELDRANK_HAVE_AVX512_BF16
#define FIELDRANK_HAVE_AVX512_BF16 0
#endif
#ifndef FIELDRANK_PORTABLE_FLAGS
#define FIELDRANK_PORTABLE_FLAGS "(baseline)"
#endif
#ifndef FIELDRANK_AVX2_FLAGS
#define FIELDRANK_AVX2_FLAGS ""
#endif
#ifndef FIELDRANK_AVX512_FLAGS
#define FIELDRANK_AVX512_FLAGS ""
#endif
#ifndef FIELDRANK_AVX512_BF16_FLAGS
#define FIELDRANK_AVX512_BF16_FLAGS ""
#endif

namespace fieldrank {
namespace simd {

extern const KernelTable portable_kernels;
#if FIELDRANK_HAVE_AVX2
extern const KernelTable avx2_kernels;
#endif
#if FIELDRANK_HAVE_AVX512
extern const KernelTable avx512_kernels;
#endif
#if FIELDRANK_HAVE_AVX512 && FIELDRANK_HAVE_AVX512_BF16
extern const KernelTable avx512_bf16_overrides;
#endif

namespace {

struct Features {
    bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false,
         avx512cd = false, avx512bf16 = false, avx512vnni = false, os_ymm = false, os_zmm = false;
};

#if FIELDRANK_X86
void cpuid(unsigned leaf, unsigned subleaf, unsigned (&regs)[4]) {
#if defined(_MSC_VER)
    int out[4];
    __cpuidex(out, static_cast<int>(leaf), static_cast<int>(subleaf));
    for (int i = 0; i < 4; ++i) regs[i] = static_cast<unsigned>(out[i]);
#else
    __cpuid_count(leaf, subleaf, regs[0], regs[1], regs[2], regs[3]);
#endif
}

unsigned long long xgetbv0() {
#if defined(_MSC_VER)
    return _xgetbv(0);
#else
    unsigned eax = 0, edx = 0;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<unsigned long long>(edx) << 32) | eax;
#endif
}
#endif

Features detect() {
    Features f;
#if FIELDRANK_X86
    unsigned regs[4] = {0, 0, 0, 0};
    cpuid(0, 0, regs);
    const unsigned max_leaf = regs[0];
    if (max_leaf < 1) return f;
    cpuid(1, 0, regs);
    const bool osxsave = (regs[2] >> 27) & 1u;
    const bool avx = (regs[2] >> 28) & 1u;
    f.fma = (regs[2] >> 12) & 1u;
    if (osxsave && avx) {
        const unsigned long long xcr0 = xgetbv0();
        f.os_ymm = (xcr0 & 0x6u) == 0x6u;             // SSE and AVX state
        f.os_zmm = f.os_ymm && (xcr0 & 0xE0u) == 0xE0u;  // opmask, ZMM_Hi256, Hi16_ZMM
    }
    if (max_leaf >= 7) {
        cpuid(7, 0, regs);
        const unsigned max_subleaf = regs[0];
        f.avx2 = (regs[1] >> 5) & 1u;
        f.avx512f = (regs[1] >> 16) & 1u;
        f.avx512dq = (regs[1] >> 17) & 1u;
        f.avx512cd = (regs[1] >> 28) & 1u;
        f.avx512bw = (regs[1] >> 30) & 1u;
        f.avx512vl = (regs[1] >> 31) & 1u;
        f.avx512vnni = (regs[2] >> 11) & 1u;
        if (max_subleaf >= 1) {
            cpuid(7, 1, regs);
            f.avx512bf16 = (regs[0] >> 5) & 1u;
        }
    }
#endif
    return f;
}

const Features& features() {
    static const Features f = detect();
    return f;
}

// (Unused in builds without the x86 variants: FIELDRANK_SIMD=OFF or another architecture.)
[[maybe_unused]] bool runs_avx2(const Features& f) { return f.os_ymm && f.avx2 && f.fma; }
[[maybe_unused]] bool runs_avx512(const Features& f) {
    return runs_avx2(f) && f.os_zmm && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl;
}
[[maybe_unused]] bool runs_avx512_bf16(const Features& f) { return runs_avx512(f) && f.avx512bf16 && f.avx512vnni; }

struct Variant {
    const char* name;
    const KernelTable* table;
    bool (*runs)(const Features&);
    const char* flags;
};

bool always(const Features&) { return true; }

#if FIELDRANK_HAVE_AVX512 && FIELDRANK_HAVE_AVX512_BF16
const KernelTable* avx512_bf16_table() {
    static const KernelTable table = [] {
        KernelTable merged = avx512_kernels;
        merged.name = avx512_bf16_overrides.name;
        merged.score_bf16 = avx512_bf16_overrides.score_bf16;
        merged.score_int8 = avx512_bf16_overrides.score_int8;
        return merged;
    }();
    return &table;
}
#endif

// Best last.
const std::vector<Variant>& variants() {
    static const std::vector<Variant> list = [] {
        std::vector<Variant> v;
        v.push_back({"portable", &portable_kernels, always, FIELDRANK_PORTABLE_FLAGS});
#if FIELDRANK_HAVE_AVX2
        v.push_back({"avx2", &avx2_kernels, runs_avx2, FIELDRANK_AVX2_FLAGS});
#endif
#if FIELDRANK_HAVE_AVX512
        v.push_back({"avx512", &avx512_kernels, runs_avx512, FIELDRANK_AVX512_FLAGS});
#endif
#if FIELDRANK_HAVE_AVX512 && FIELDRANK_HAVE_AVX512_BF16
        v.push_back({"avx512_bf16", avx512_bf16_table(), runs_avx512_bf16, FIELDRANK_AVX512_BF16_FLAGS});
#endif
        return v;
    }();
    return list;
}

const char* const kAllVariantNames = "portable, avx2, avx512, avx512_bf16";

std::atomic<const KernelTable*> g_active{nullptr};
std::once_flag g_init;

const Variant* find_variant(const std::string& name) {
    for (const Variant& v : variants())
        if (name == v.name) return &v;
    return nullptr;
}

}  // namespace

std::vector<std::string> compiled_variants() {
    std::vector<std::string> out;
    for (const Variant& v : variants()) out.emplace_back(v.name);
    return out;
}

bool cpu_supports(const std::string& variant) {
    const Variant* v = find_variant(variant);
    return v != nullptr && v->runs(features());
}

std::vector<std::string> supported_variants() {
    std::vector<std::string> out;
    for (const Variant& v : variants())
        if (v.runs(features())) out.emplace_back(v.name);
    return out;
}

void set_kernel_variant(const std::string& variant) {
    const Variant* v = find_variant(variant);
    if (v == nullptr) {
        std::ostringstream message;
        message << "kernel variant must be one of this build's variants (";
        const auto names = compiled_variants();
        for (std::size_t i = 0; i < names.size(); ++i) message << (i ? ", " : "") << names[i];
        message << "; known: " << kAllVariantNames << "), got '" << variant << "'";
        throw std::invalid_argument(message.str());
    }
    if (!v->runs(features())) {
        std::ostringstream message;
        message << "kernel variant '" << variant << "' needs CPU features this machine lacks (it has: "
                << cpu_features() << "); supported here:";
        for (const auto& name : supported_variants()) message << ' ' << name;
        throw std::invalid_argument(message.str());
    }
    g_active.store(v->table, std::memory_order_release);
}

std::string kernel_variant() { return kernels().name; }

void initialize_kernels() {
    const char* requested = std::getenv("FIELDRANK_KERNEL");
    if (requested != nullptr && requested[0] != '\0') {
        set_kernel_variant(requested);
        return;
    }
    const Variant* best = nullptr;
    for (const Variant& v : variants())
        if (v.runs(features())) best = &v;
    g_active.store(best->table, std::memory_order_release);
}

const KernelTable& kernels() {
    const KernelTable* table = g_active.load(std::memory_order_acquire);
    if (table != nullptr) return *table;
    // First use without an explicit initialisation (C++ callers): pick as at import. A bad
    // FIELDRANK_KERNEL falls back to the best variant here; the Python import reports it instead.
    std::call_once(g_init, [] {
        if (g_active.load(std::memory_order_acquire) != nullptr) return;
        try {
            initialize_kernels();
        } catch (const std::invalid_argument&) {
            const Variant* best = nullptr;
            for (const Variant& v : variants())
                if (v.runs(features())) best = &v;
            g_active.store(best->table, std::memory_order_release);
        }
    });
    return *g_active.load(std::memory_order_acquire);
}

std::vector<std::string> variant_flags() {
    std::vector<std::string> out;
    for (const Variant& v : variants()) out.push_back(std::string(v.name) + ": " + v.flags);
    return out;
}

std::string cpu_features() {
    const Features& f = features();
    std::ostringstream out;
    bool any = false;
    auto add = [&](bool on, const char* name) {
        if (!on) return;
        out << (any ? " " : "") << name;
        any = true;
    };
    add(f.avx2, "avx2");
    add(f.fma, "fma");
    add(f.avx512f, "avx512f");
    add(f.avx512dq, "avx512dq");
    add(f.avx512cd, "avx512cd");
    add(f.avx512bw, "avx512bw");
    add(f.avx512vl, "avx512vl");
    add(f.avx512vnni, "avx512_vnni");
    add(f.avx512bf16, "avx512_bf16");
    add(f.os_ymm, "os_ymm");
    add(f.os_zmm, "os_zmm");
    if (!any) out << (FIELDRANK_X86 ? "none of the above" : "non-x86 (portable kernels only)");
    return out.str();
}

}  // namespace simd
}  // namespace fieldrank
