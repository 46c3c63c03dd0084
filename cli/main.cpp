// mixlab-cli entry: dispatches to a sub-command and turns escaping errors into exit codes.
#include "commands.h"

#include "mixlab/error.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

namespace {

void print_usage(std::FILE* out)
{
    std::fprintf(
        out, "usage: mixlab-cli <command> [options]\n"
             "\n"
             "commands:\n"
             "  train     train a model under one precision policy\n"
             "  compare   train under several policies in lockstep and compare them\n"
             "  explain   compare policies, then say why precision helped or not\n"
             "  maxbatch  largest batch per policy and throughput against batch size\n"
             "  summary   per-layer shapes, parameters, FLOPs and tensor-core fit\n"
             "  check     compare the CUDA backend with the CPU reference, op by op\n"
             "  ceilings  device facts and its measured GEMM TFLOP/s and copy GB/s (cached)\n"
             "  corpus    a word-level corpus: vocabulary, tokens, unigram perplexity, floor\n"
             "  numerics  a log's numerics per layer: ranges, overflow, underflow, lost updates\n"
             "  import    a Keras model's JSON (model.to_json()) as a MixLab model spec\n"
             "\n"
             "  mixlab-cli <command> --help   options of one command\n"
             "  mixlab-cli --version\n");
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const std::string command = argv[1];
    if (command == "--version" || command == "version") {
        std::printf("mixlab-cli %s\n", MIXLAB_VERSION);
        return 0;
    }
    if (command == "--help" || command == "-h" || command == "help") {
        print_usage(stdout);
        return 0;
    }
    try {
        if (command == "train") return mixlab::cli::cmd_train(argc - 1, argv + 1);
        if (command == "compare") return mixlab::cli::cmd_compare(argc - 1, argv + 1);
        if (command == "explain") return mixlab::cli::cmd_explain(argc - 1, argv + 1);
        if (command == "summary") return mixlab::cli::cmd_summary(argc - 1, argv + 1);
        if (command == "check") return mixlab::cli::cmd_check(argc - 1, argv + 1);
        if (command == "maxbatch") return mixlab::cli::cmd_maxbatch(argc - 1, argv + 1);
        if (command == "ceilings") return mixlab::cli::cmd_ceilings(argc - 1, argv + 1);
        if (command == "corpus") return mixlab::cli::cmd_corpus(argc - 1, argv + 1);
        if (command == "numerics") return mixlab::cli::cmd_numerics(argc - 1, argv + 1);
        if (command == "import") return mixlab::cli::cmd_import(argc - 1, argv + 1);
    } catch (const mixlab::InputError& e) {
        std::fprintf(stderr, "mixlab-cli %s: %s\n", command.c_str(), e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mixlab-cli %s: error: %s\n", command.c_str(), e.what());
        return 1;
    }
    std::fprintf(stderr, "mixlab-cli: unknown command '%s'\n", command.c_str());
    print_usage(stderr);
    return 2;
}
