// mixlab-cli sub-commands. Each returns the process exit code: 0 success, 2 bad input
// (one-line message on stderr), 1 failure during the run.
#pragma once

namespace mixlab::cli {

int cmd_train(int argc, char** argv); // argv[0] is "train"
int cmd_compare(int argc, char** argv);
int cmd_summary(int argc, char** argv);
int cmd_explain(int argc, char** argv);  // compare, then why precision helped or not
int cmd_check(int argc, char** argv);    // CUDA backend against the CPU reference
int cmd_maxbatch(int argc, char** argv); // largest batch per policy, throughput curve
int cmd_ceilings(int argc, char** argv); // device facts and measured GEMM/copy ceilings
int cmd_corpus(int argc, char** argv);   // a word-level corpus: vocabulary, tokens, perplexities
int cmd_numerics(int argc, char** argv); // a log's numerics, per layer and format
int cmd_import(int argc, char** argv);   // a Keras model's JSON as a MixLab model spec

} // namespace mixlab::cli
