// `mixlab-cli ceilings`: the device's capability facts and its measured ceilings (GEMM
// TFLOP/s per precision, copy GB/s), from the per-device cache or a fresh probe.
#include "commands.h"

#include "args.h"

#include "mixlab/backend.h"
#include "mixlab/capabilities.h"
#include "mixlab/ceilings.h"
#include "mixlab/run_config.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace mixlab::cli {

namespace {

std::string tflops_text(double v)
{
    char text[48];
    if (v <= 0) return "not supported";
    if (v >= 1)
        std::snprintf(text, sizeof text, "%.1f TFLOP/s", v);
    else // the CPU backend: TFLOP/s would print as 0.0
        std::snprintf(text, sizeof text, "%.1f GFLOP/s", v * 1e3);
    return text;
}

std::string gbs_text(double v)
{
    char text[48];
    std::snprintf(text, sizeof text, v >= 10 ? "%.0f GB/s" : "%.2f GB/s", v);
    return text;
}

} // namespace

int cmd_ceilings(int argc, char** argv)
{
    ArgParser parser(
        "mixlab-cli ceilings [--device auto|cpu|cuda] [--refresh] [--json] [--cache FILE]",
        "The device's capability facts and its ceilings: large-GEMM TFLOP/s per "
        "precision and device copy GB/s, measured once per device (a few seconds) "
        "and cached; the roofline the explain command compares layers with.");
    parser.add_option("--device", "CHOICE", "auto (default), cpu or cuda");
    parser.add_flag("--refresh", "measure again even when the cache holds this device");
    parser.add_flag("--json", "print one JSON object instead of text");
    parser.add_option("--cache", "FILE",
                      "the cache file (default " + default_ceilings_cache_path() + ")");
    parser.parse(argc, argv);
    if (parser.help_requested()) {
        std::printf("%s", parser.help_text().c_str());
        return 0;
    }
    const DeviceChoice choice = parse_device_choice(parser.value_or("--device", "auto"));
    const std::string cache = parser.value_or("--cache", default_ceilings_cache_path());
    auto backend = make_backend(choice);
    const DeviceInfo info = backend->info();

    if (!parser.flag("--json") && (parser.flag("--refresh") || !cached_ceilings(info, cache))) {
        std::fprintf(stderr, "measuring the ceilings of %s (a few seconds)...\n",
                     info.name.c_str());
        std::fflush(stderr);
    }
    CeilingsRequest request;
    request.refresh = parser.flag("--refresh");
    const Ceilings c = ceilings_for(*backend, cache, request);

    if (parser.flag("--json")) {
        nlohmann::json facts = nlohmann::json::array();
        for (const CapabilityFact& f : capability_facts(info))
            facts.push_back({{"label", f.label}, {"value", f.value}, {"note", f.note}});
        const nlohmann::json doc = {{"device", facts},
                                    {"ceilings", nlohmann::json::parse(ceilings_to_json(c))},
                                    {"cache_path", cache}};
        std::printf("%s\n", doc.dump(2).c_str());
    } else {
        std::printf("%s", describe_capabilities(info).c_str());
        std::printf("\nceilings (%s %s):\n", c.from_cache ? "cached, measured" : "measured now,",
                    c.measured_at.c_str());
        std::printf("  fp32 GEMM (no TF32)  %s\n", tflops_text(c.fp32_tflops).c_str());
        std::printf("  tf32 GEMM            %s\n", tflops_text(c.tf32_tflops).c_str());
        std::printf("  fp16 GEMM            %s\n", tflops_text(c.fp16_tflops).c_str());
        std::printf("  bf16 GEMM            %s\n", tflops_text(c.bf16_tflops).c_str());
        std::printf("  fp8 GEMM (E4M3)      %s\n", tflops_text(c.fp8_tflops).c_str());
        std::printf("  device copy          %s (read + write)\n", gbs_text(c.copy_gbs).c_str());
        std::printf("  probe: GEMM %d^3, copy %.0f MiB, median of %d, %.1f s\n", c.gemm_size,
                    double(c.copy_bytes) / (1024.0 * 1024.0), c.repetitions, c.probe_seconds);
        std::printf("  cache: %s%s\n", cache.c_str(),
                    c.from_cache ? "" : " (--refresh measures again)");
    }
    if (!c.cache_error.empty())
        std::fprintf(stderr, "mixlab-cli ceilings: warning: %s\n", c.cache_error.c_str());
    return 0;
}

} // namespace mixlab::cli
