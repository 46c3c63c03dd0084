// `mixlab-cli check`: runs the CUDA backend against the CPU reference op by op and
// prints one line per check, then "N passed, M failed"; optionally a JSON report.
#include "commands.h"

#include "args.h"

#include "mixlab/backend_check.h"
#include "mixlab/backend.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>

namespace mixlab::cli {

int cmd_check(int argc, char** argv)
{
    ArgParser parser("mixlab-cli check [--filter SUBSTR] [--seed N] [--json FILE] [--plans] "
                     "[--details]",
                     "Compare the CUDA backend with the CPU reference, op by op: every dtype, "
                     "every GEMM math mode, transpose and epilogue, the loss heads, the optimizer "
                     "with loss scaling, and a short end-to-end run. Exit 0 when all pass.");
    parser.add_option("--filter", "SUBSTR", "run only the checks whose name contains SUBSTR");
    parser.add_option("--seed", "N", "seed of the random inputs (default 1)");
    parser.add_option("--json", "FILE", "also write every result as JSON to FILE");
    parser.add_flag("--plans", "list the GEMM plans (fused or not) and convolution plans "
                               "(algorithms, tensor cores) the CUDA backend built");
    parser.add_flag("--details", "print a passing check's detail too: how many outputs it "
                                 "compared, the plan or algorithm that ran, the words both "
                                 "backends refused a bad call with");
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::printf("%s", parser.help_text().c_str());
        return 0;
    }
    const std::string filter = parser.value_or("--filter", "");
    const std::uint64_t seed = parser.unsigned_integer("--seed").value_or(1);

    if (!cuda_backend_available()) {
        std::printf("no CUDA device: nothing to check (%s)\n",
                    cuda_backend_unavailable_reason().c_str());
        return 0;
    }
    auto reference = make_backend(DeviceChoice::CPU);
    auto candidate = make_backend(DeviceChoice::CUDA);
    const DeviceInfo info = candidate->info();
    std::printf("checking %s (compute capability %d.%d, driver %s, runtime %s, cuBLAS %s) "
                "against the CPU reference, seed %llu\n",
                info.name.c_str(), info.cc_major, info.cc_minor, info.driver_version.c_str(),
                info.runtime_version.c_str(), info.cublas_version.c_str(),
                static_cast<unsigned long long>(seed));
    std::fflush(stdout);

    const std::vector<CheckResult> results =
        run_backend_checks(*reference, *candidate, seed, filter);
    int passed = 0, failed = 0;
    // A failure's detail is why it failed: always shown. A pass's is on request.
    const bool details = parser.flag("--details");
    nlohmann::json items = nlohmann::json::array();
    for (const CheckResult& r : results) {
        (r.passed ? passed : failed) += 1;
        const bool show = !r.passed || details;
        std::printf("%s %s  max_abs %.3g  max_rel %.3g%s%s\n", r.passed ? "PASS" : "FAIL",
                    r.name.c_str(), r.max_abs_err, r.max_rel_err, show ? "  " : "",
                    show ? r.detail.c_str() : "");
        items.push_back({{"name", r.name},
                         {"passed", r.passed},
                         {"max_abs_err", r.max_abs_err},
                         {"max_rel_err", r.max_rel_err},
                         {"detail", r.detail}});
    }

    nlohmann::json plans = nlohmann::json::array();
    nlohmann::json conv_plans = nlohmann::json::array();
    // The plans come from the CUDA module as text and JSON: this program never links it.
    for (const PlanReport& p : backend_plan_reports(*candidate)) {
        if (parser.flag("--plans")) std::printf("plan %s\n", p.description.c_str());
        (p.kind == "conv" ? conv_plans : plans).push_back(nlohmann::json::parse(p.json));
    }

    if (const auto path = parser.value("--json")) {
        const nlohmann::json doc = {
            {"seed", seed},        {"filter", filter},        {"device", device_info_to_json(info)},
            {"results", items},    {"passed", passed},        {"failed", failed},
            {"gemm_plans", plans}, {"conv_plans", conv_plans}};
        std::ofstream out(*path);
        if (!out) throw InputError("--json: cannot write '" + *path + "'");
        out << doc.dump(2) << "\n";
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

} // namespace mixlab::cli
