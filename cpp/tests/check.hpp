// A tiny test harness for the C++ core: TEST_CASE registers a function, CHECK records a
// failure and carries on, REQUIRE stops the test case. No Python, no framework download.
#pragma once

#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include <fieldrank/types.hpp>

namespace fieldrank_test {

struct Case {
    const char* name;
    std::function<void()> body;
};

inline std::vector<Case>& registry() {
    static std::vector<Case> cases;
    return cases;
}

struct Registrar {
    Registrar(const char* name, std::function<void()> body) { registry().push_back({name, std::move(body)}); }
};

// Failures of the test case that is running.
inline int& failures() {
    static int count = 0;
    return count;
}

struct Stop {};  // thrown by REQUIRE to end the current case

inline void report(const char* file, int line, const std::string& what) {
    ++failures();
    std::fprintf(stderr, "  %s:%d: FAILED %s\n", file, line, what.c_str());
}

template <typename A, typename B>
std::string describe(const char* text, const A& a, const B& b) {
    std::ostringstream out;
    out << text << "  (" << a << " vs " << b << ")";
    return out.str();
}

// Eigen vectors compared element by element, with the first difference reported.
template <typename A, typename B>
bool same_vector(const A& a, const B& b, std::string& why) {
    if (a.size() != b.size()) {
        why = "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
        return false;
    }
    for (Eigen::Index i = 0; i < a.size(); ++i) {
        if (!(a[i] == b[i])) {
            std::ostringstream out;
            out << "first difference at " << i << ": " << a[i] << " vs " << b[i];
            why = out.str();
            return false;
        }
    }
    return true;
}

template <typename A, typename B>
bool close_vector(const A& a, const B& b, double tol, std::string& why) {
    if (a.size() != b.size()) {
        why = "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
        return false;
    }
    for (Eigen::Index i = 0; i < a.size(); ++i) {
        const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
        if (!(std::abs(x - y) <= tol * std::max(1.0, std::abs(y)))) {
            std::ostringstream out;
            out << "first difference at " << i << ": " << x << " vs " << y << " (tol " << tol << ")";
            why = out.str();
            return false;
        }
    }
    return true;
}

}  // namespace fieldrank_test

#define FR_CONCAT_INNER(a, b) a##b
#define FR_CONCAT(a, b) FR_CONCAT_INNER(a, b)

#define TEST_CASE(name)                                                                              \
    static void FR_CONCAT(fr_test_fn_, __LINE__)();                                                  \
    static const ::fieldrank_test::Registrar FR_CONCAT(fr_test_reg_, __LINE__)(name, &FR_CONCAT(fr_test_fn_, __LINE__)); \
    static void FR_CONCAT(fr_test_fn_, __LINE__)()

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) ::fieldrank_test::report(__FILE__, __LINE__, "CHECK(" #cond ")"); \
    } while (0)

#define REQUIRE(cond)                                                                  \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            ::fieldrank_test::report(__FILE__, __LINE__, "REQUIRE(" #cond ")");        \
            throw ::fieldrank_test::Stop{};                                            \
        }                                                                              \
    } while (0)

#define CHECK_EQ(a, b)                                                                                   \
    do {                                                                                                 \
        const auto& fr_a_ = (a);                                                                         \
        const auto& fr_b_ = (b);                                                                         \
        if (!(fr_a_ == fr_b_))                                                                           \
            ::fieldrank_test::report(__FILE__, __LINE__, ::fieldrank_test::describe("CHECK_EQ(" #a ", " #b ")", fr_a_, fr_b_)); \
    } while (0)

// |a - b| <= tol * max(1, |b|)
#define CHECK_CLOSE(a, b, tol)                                                                           \
    do {                                                                                                 \
        const double fr_a_ = static_cast<double>(a);                                                     \
        const double fr_b_ = static_cast<double>(b);                                                     \
        if (!(std::abs(fr_a_ - fr_b_) <= (tol) * std::max(1.0, std::abs(fr_b_))))                       \
            ::fieldrank_test::report(__FILE__, __LINE__,                                                 \
                                     ::fieldrank_test::describe("CHECK_CLOSE(" #a ", " #b ", " #tol ")", fr_a_, fr_b_)); \
    } while (0)

// Two Eigen vectors (or a vector and an expected IdVector/VectorXf) equal element by element.
#define CHECK_VEC_EQ(a, b)                                                                    \
    do {                                                                                      \
        std::string fr_why_;                                                                  \
        if (!::fieldrank_test::same_vector((a), (b), fr_why_))                                \
            ::fieldrank_test::report(__FILE__, __LINE__, "CHECK_VEC_EQ(" #a ", " #b "): " + fr_why_); \
    } while (0)

#define CHECK_VEC_CLOSE(a, b, tol)                                                            \
    do {                                                                                      \
        std::string fr_why_;                                                                  \
        if (!::fieldrank_test::close_vector((a), (b), (tol), fr_why_))                        \
            ::fieldrank_test::report(__FILE__, __LINE__, "CHECK_VEC_CLOSE(" #a ", " #b "): " + fr_why_); \
    } while (0)

// The statement throws exactly `type` (or a subclass) whose message contains `fragment` ("": any
// message); anything else, or nothing, fails. `macro` names the check in the report.
#define FR_CHECK_THROWS_(statement, type, fragment, macro)                                              \
    do {                                                                                                \
        bool fr_caught_ = false;                                                                        \
        try {                                                                                           \
            (void)(statement);                                                                          \
        } catch (const type& fr_e_) {                                                                   \
            fr_caught_ = true;                                                                          \
            if (std::string(fr_e_.what()).find(fragment) == std::string::npos)                         \
                ::fieldrank_test::report(__FILE__, __LINE__,                                            \
                                         std::string("message of " #statement " lacks \"") + (fragment) + \
                                             "\": " + fr_e_.what());                                    \
        } catch (const std::exception& fr_e_) {                                                         \
            ::fieldrank_test::report(__FILE__, __LINE__,                                                \
                                     std::string(macro "(" #statement ", " #type "): threw ") +         \
                                         typeid(fr_e_).name() + ": " + fr_e_.what());                   \
            fr_caught_ = true;                                                                          \
        }                                                                                               \
        if (!fr_caught_)                                                                                \
            ::fieldrank_test::report(__FILE__, __LINE__, macro "(" #statement ", " #type "): did not throw"); \
    } while (0)

// The statement throws exactly `type` (or a subclass); anything else, or nothing, fails.
#define CHECK_THROWS_AS(statement, type) FR_CHECK_THROWS_(statement, type, "", "CHECK_THROWS_AS")

// As CHECK_THROWS_AS, and the message contains `fragment` (messages must name the argument).
#define CHECK_THROWS_WITH(statement, type, fragment) \
    FR_CHECK_THROWS_(statement, type, fragment, "CHECK_THROWS_WITH")

// Row b of a batch result equals the single-query result bit for bit, ids and scores: every
// operator's batch form is checked against its single form this way.
#define CHECK_BATCH_ROW(batch, b, single)                                                        \
    do {                                                                                         \
        CHECK_VEC_EQ(::fieldrank::IdVector((batch).ids.row(b).transpose()), (single).ids);       \
        CHECK_VEC_EQ(::fieldrank::VectorXf((batch).scores.row(b).transpose()), (single).scores); \
    } while (0)

// Two batch results equal bit for bit, ids and scores (results do not depend on the thread count).
#define CHECK_SAME_BATCH(a, b)              \
    do {                                    \
        CHECK((a).ids == (b).ids);          \
        CHECK((a).scores == (b).scores);    \
    } while (0)
