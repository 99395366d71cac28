// A Compiler for tests that runs nothing: it records every job, writes a
// small output file, and fails on request, so tests of the module builder and
// of preludes need no real compiler.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "opweave/compiler.hpp"
#include "opweave/errors.hpp"
#include "opweave/module_cache.hpp"
#include "temp_dir.hpp"

namespace opweave_test {

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

    // Every job compile() or compile_header() was given, in order.
    mutable std::vector<opweave::CompileJob> jobs;

    opweave::CompileResult compile(const opweave::CompileJob& job,
                                   opweave::BuildMonitor* /*monitor*/ = nullptr) const override {
        return run(job, "-shared");
    }
    opweave::CompileResult compile_header(
        const opweave::CompileJob& job, opweave::BuildMonitor* /*monitor*/ = nullptr) const override {
        return run(job, "-x c++-header");
    }

private:
    opweave::CompileResult run(const opweave::CompileJob& job, const std::string& mode) const {
        jobs.push_back(job);
        std::vector<std::string> command = {m_identity.path, mode};
        command.insert(command.end(), job.flags.begin(), job.flags.end());
        command.insert(command.end(), job.unkeyed_flags.begin(), job.unkeyed_flags.end());
        command.insert(command.end(), {"-o", job.output.string(), job.source.string()});
        bool fails = always_fail;
        for (const std::string& flag : job.unkeyed_flags) {
            fails = fails || (!fail_with_unkeyed_flag.empty() && flag == fail_with_unkeyed_flag);
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
