// For tests that build a real library: loads it and calls its
// `int opweave_answer()`.
#pragma once

#include <dlfcn.h>

#include <filesystem>

#include "check.hpp"

namespace opweave_test {

// The value `opweave_answer()` of `library` returns; -1 (and a failed check)
// when the library cannot be loaded or lacks the function.
inline int call_answer(const std::filesystem::path& library) {
    void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    CHECK(handle != nullptr);
    if (handle == nullptr) {
        return -1;
    }
    void* address = ::dlsym(handle, "opweave_answer");
    CHECK(address != nullptr);
    const int answer = address != nullptr ? reinterpret_cast<int (*)()>(address)() : -1;
    ::dlclose(handle);
    return answer;
}

}  // namespace opweave_test
