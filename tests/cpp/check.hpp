// A minimal test harness for opweave's C++ unit tests: register test
// functions with OPWEAVE_TEST, assert with CHECK / CHECK_EQ / CHECK_THROWS_AS,
// and end a test that cannot run here with SKIP("why"). check_main.cpp runs
// every registered test and exits non-zero on a failure; a program whose
// tests all skipped exits with k_skip_exit_code, which ctest reports as
// skipped (tests/cpp/CMakeLists.txt).
#pragma once

#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace opweave_test {

struct TestCase {
    const char* name;
    std::function<void()> body;
};

std::vector<TestCase>& registry();
void record_failure(const char* file, int line, const std::string& message);

// Thrown by SKIP: the test cannot run on this machine, for `reason`.
struct Skipped {
    std::string reason;
};

constexpr int k_skip_exit_code = 77;

struct Registrar {
    Registrar(const char* name, std::function<void()> body) {
        registry().push_back({name, std::move(body)});
    }
};

template <typename T>
std::string describe(const T& value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

// CHECK_EQ's comparison. Taking the values as arguments is what keeps them
// alive: a temporary in `actual` or `expected` (such as the optional that
// *read_file(path) reads through) lives until the end of the full-expression
// that calls this function, so the references are valid for the whole check,
// and nothing is copied. (A `const auto&` local bound to such an expression
// dangles as soon as its statement ends.)
template <typename A, typename E>
void check_eq(const A& actual, const E& expected, const char* file, int line,
              const char* text) {
    if (!(actual == expected)) {
        record_failure(file, line,
                       std::string(text) + ": got " + describe(actual) + ", expected " +
                           describe(expected));
    }
}

}  // namespace opweave_test

#define OPWEAVE_TEST(name)                                                        \
    static void name();                                                           \
    static const ::opweave_test::Registrar opweave_registrar_##name(#name, name); \
    static void name()

#define SKIP(reason) throw ::opweave_test::Skipped{(reason)}

#define CHECK(condition)                                                              \
    do {                                                                              \
        if (!(condition)) {                                                           \
            ::opweave_test::record_failure(__FILE__, __LINE__, "CHECK(" #condition ")"); \
        }                                                                             \
    } while (0)

#define CHECK_EQ(actual, expected)                                     \
    ::opweave_test::check_eq((actual), (expected), __FILE__, __LINE__, \
                             "CHECK_EQ(" #actual ", " #expected ")")

#define CHECK_THROWS_AS(expression, exception_type)                                     \
    do {                                                                                \
        bool opweave_thrown = false;                                                    \
        try {                                                                           \
            (void)(expression);                                                         \
        } catch (const exception_type&) {                                               \
            opweave_thrown = true;                                                      \
        } catch (...) {                                                                 \
        }                                                                               \
        if (!opweave_thrown) {                                                          \
            ::opweave_test::record_failure(__FILE__, __LINE__,                          \
                                           #expression " did not throw " #exception_type); \
        }                                                                               \
    } while (0)
