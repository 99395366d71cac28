// A Compiler for tests that runs nothing: it records every job, writes a
// small output file, and fails on request, so tests of the module builder and
// of preludes need no real compiler.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_cache.hpp"
#include "temp_dir.hpp"

namespace opweave_test {

// The --version text of a GCC, for fakes that pose as one.
constexpr const char* k_gcc_version =
    "g++ (Debian 12.2.0-14) 12.2.0\n"
    "Copyright (C) 2022 Free Software Foundation, Inc.\n";

// Options for a module cache rooted in `<dir>/cache`.
inline opweave::CacheOptions cache_options(const TempDir& dir) {
    opweave::CacheOptions options;
    options.root = dir / "cache";
    return options;
}

class FakeCompiler final : public opweave::Compiler {
public:
    // `version` is the identity's --version text.
    explicit FakeCompiler(std::string version = "fakecxx 1.0\n") {
        m_identity.path = "/opt/fake/bin/fakecxx";
        m_identity.version = std::move(version);
    }

    const opweave::CompilerIdentity& identity() const override { return m_identity; }
    opweave::CompilerIdentity& identity() { return m_identity; }

    // Fails (exit status 1) every compile whose unkeyed flags contain this.
    std::string fail_with_unkeyed_flag;
    // Fails every compile (exit status 1).
    bool always_fail = false;
    // Bytes written to each output file.
    std::string output_content = "fake output";
    // Files "read" by each compile, written to the job's depfile if it has one.
    std::vector<std::string> dependencies;
    // Called in the middle of each compile (to change a file meanwhile).
    std::function<void()> during_compile;

    // Every job compile(), compile_header(), compile_object() or link() was
    // given, in order (units compile on several threads: see `mutex`).
    mutable std::vector<opweave::CompileJob> jobs;
    // The mode of each job: "-shared", "-x c++-header", "-c" or "link".
    mutable std::vector<std::string> modes;
    // The text of each job's source as compiled (empty for a link).
    mutable std::vector<std::string> sources;
    // Fails every compile whose source contains this text.
    std::string fail_with_source_text;
    mutable std::mutex mutex;

    opweave::CompileResult compile(const opweave::CompileJob& job,
                                   opweave::BuildMonitor* /*monitor*/ = nullptr) const override {
        return run(job, "-shared");
    }
    opweave::CompileResult compile_header(
        const opweave::CompileJob& job, opweave::BuildMonitor* /*monitor*/ = nullptr) const override {
        return run(job, "-x c++-header");
    }
    opweave::CompileResult compile_object(
        const opweave::CompileJob& job, opweave::BuildMonitor* /*monitor*/ = nullptr) const override {
        return run(job, "-c");
    }
    // Writes `output_content` followed by the content of every object.
    opweave::CompileResult link(const opweave::CompileJob& job,
                                const std::vector<std::filesystem::path>& objects,
                                opweave::BuildMonitor* /*monitor*/ = nullptr) const override {
        {
            std::lock_guard<std::mutex> guard(mutex);
            jobs.push_back(job);
            modes.emplace_back("link");
            sources.emplace_back();
        }
        std::ofstream out(job.output, std::ios::binary);
        out << output_content;
        std::vector<std::string> command = {m_identity.path, "-shared", "-o", job.output.string()};
        for (const std::filesystem::path& object : objects) {
            std::ifstream in(object, std::ios::binary);
            if (!in) {
                throw opweave::CompileError("fakecxx cannot read " + object.string(), command,
                                            "", job.source, 1);
            }
            out << in.rdbuf();
            command.push_back(object.string());
        }
        opweave::CompileResult result;
        result.commands.push_back(std::move(command));
        result.seconds = 0.01;
        return result;
    }

private:
    opweave::CompileResult run(const opweave::CompileJob& job, const std::string& mode) const {
        std::ifstream source(job.source);
        std::string text((std::istreambuf_iterator<char>(source)), std::istreambuf_iterator<char>());
        {
            std::lock_guard<std::mutex> guard(mutex);
            jobs.push_back(job);
            modes.push_back(mode);
            sources.push_back(text);
        }
        std::vector<std::string> command = {m_identity.path, mode};
        command.insert(command.end(), job.flags.begin(), job.flags.end());
        command.insert(command.end(), job.unkeyed_flags.begin(), job.unkeyed_flags.end());
        command.insert(command.end(), {"-o", job.output.string(), job.source.string()});
        bool fails = always_fail;
        for (const std::string& flag : job.unkeyed_flags) {
            fails = fails || (!fail_with_unkeyed_flag.empty() && flag == fail_with_unkeyed_flag);
        }
        if (!fail_with_source_text.empty()) {
            fails = fails || text.find(fail_with_source_text) != std::string::npos;
        }
        if (fails) {
            throw opweave::CompileError("fakecxx failed with exit status 1 compiling " +
                                            job.source.string(),
                                        command, "error: fake failure\n", job.source, 1);
        }
        if (during_compile) {
            during_compile();
        }
        std::ofstream(job.output, std::ios::binary) << output_content;
        if (!job.depfile.empty()) {
            std::ofstream depfile(job.depfile);
            depfile << job.output.string() << ": " << job.source.string();
            for (const std::string& dependency : dependencies) {
                depfile << " \\\n " << dependency;
            }
            depfile << "\n";
        }
        opweave::CompileResult result;
        result.commands.push_back(std::move(command));
        result.seconds = 0.01;
        return result;
    }

    opweave::CompilerIdentity m_identity;
};

}  // namespace opweave_test
