// opweave core (internal): shared build helpers (see build_support.hpp).
#include "cache/build_support.hpp"

#include <unistd.h>

#include "cache/header_manifest.hpp"
#include "util/fs.hpp"

namespace opweave::cache {

namespace {

void make_absolute(std::vector<std::string>& dirs) {
    for (std::string& dir : dirs) {
        if (!dir.empty() && dir.front() != '/') {
            dir = std::filesystem::absolute(dir).lexically_normal().string();
        }
    }
}

// `word` as one word of a POSIX shell command line: as is when it holds only
// characters the shell leaves alone, else in single quotes.
std::string shell_quoted(const std::string& word) {
    const bool plain = !word.empty() && word.find_first_not_of(
                                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-+=/.,:@%") == std::string::npos;
    if (plain) {
        return word;
    }
    std::string quoted = "'";
    for (char c : word) {
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return quoted + "'";
}

}  // namespace

std::string join_words(const std::vector<std::string>& words) {
    std::string text;
    for (const std::string& word : words) {
        text += (text.empty() ? "" : " ") + word;
    }
    return text;
}

CompileJob absolute_dirs(const CompileJob& job) {
    CompileJob copy = job;
    make_absolute(copy.include_dirs);
    make_absolute(copy.lib_dirs);
    return copy;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); !from.empty() && at != std::string::npos;
         at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

std::string display_command(const CompileResult& result, const std::filesystem::path& staging,
                            const std::filesystem::path& entry) {
    std::string command;
    if (!result.working_dir.empty()) {
        command = "cd " + shell_quoted(result.working_dir.string());
    }
    for (const auto& words : result.commands) {
        std::string line;
        for (const std::string& word : words) {
            line += (line.empty() ? "" : " ") + shell_quoted(word);
        }
        command += (command.empty() ? "" : "\n") + line;
    }
    return replace_all(command, staging.string(), entry.string());
}

std::vector<HeaderRecord> compiled_headers(const ModuleCache& cache, const ModuleRequest& request,
                                           const CompileJob& staged,
                                           std::int64_t compile_start_ns) {
    const std::optional<std::string> text = util::read_file(staged.depfile);
    util::remove_tree(staged.depfile);
    if (!text) {
        return {};
    }
    HeaderFilter filter;
    filter.working_dir =
        staged.working_dir.empty() ? std::filesystem::current_path() : staged.working_dir;
    filter.source = staged.source;
    filter.skip_dirs.push_back(cache.root());
    for (const std::string& dir : request.covered_header_dirs) {
        filter.skip_dirs.push_back(std::filesystem::absolute(dir));
    }
    return record_headers(parse_depfile(*text), filter, compile_start_ns);
}

}  // namespace opweave::cache
