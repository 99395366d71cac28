// Runs every test registered with OPWEAVE_TEST; prints one line per test and
// a closing "N passed, M failed, K skipped" line; exits 1 if any test failed
// (or none ran), k_skip_exit_code if every test skipped, 0 otherwise.
#include "check.hpp"

#include <exception>

namespace opweave_test {

namespace {
int g_failures_in_current_test = 0;
}

std::vector<TestCase>& registry() {
    static std::vector<TestCase> tests;
    return tests;
}

void record_failure(const char* file, int line, const std::string& message) {
    ++g_failures_in_current_test;
    std::cerr << file << ":" << line << ": " << message << "\n";
}

}  // namespace opweave_test

int main() {
    int passed = 0;
    int failed = 0;
    int skipped = 0;
    for (const auto& test : opweave_test::registry()) {
        opweave_test::g_failures_in_current_test = 0;
        try {
            test.body();
        } catch (const opweave_test::Skipped& skip) {
            if (opweave_test::g_failures_in_current_test == 0) {
                std::cout << "skip   " << test.name << ": " << skip.reason << "\n";
                ++skipped;
                continue;
            }
        } catch (const std::exception& e) {
            opweave_test::record_failure(test.name, 0,
                                         std::string("unexpected exception: ") + e.what());
        } catch (...) {
            opweave_test::record_failure(test.name, 0, "unexpected non-standard exception");
        }
        const bool ok = opweave_test::g_failures_in_current_test == 0;
        std::cout << (ok ? "ok     " : "FAILED ") << test.name << "\n";
        (ok ? passed : failed) += 1;
    }
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
    if (failed > 0) {
        return 1;
    }
    if (passed == 0) {
        return skipped > 0 ? opweave_test::k_skip_exit_code : 1;
    }
    return 0;
}
