// ProgressPrinter: throttled step lines, epoch lines and events, one line each.
#include "progress_printer.h"

#include <algorithm>
#include <cmath>

namespace mixlab::cli {
namespace {

std::int64_t auto_interval(std::int64_t total_steps)
{
    return std::max<std::int64_t>(1, total_steps / 20);
}

} // namespace

ProgressPrinter::ProgressPrinter(std::FILE* out, std::vector<RunInfo> runs,
                                 std::int64_t every_n_steps, double min_interval_s)
    : m_out(out), m_every_n(every_n_steps), m_min_interval(min_interval_s)
{
    for (RunInfo& info : runs) {
        State s;
        s.every = m_every_n > 0 ? m_every_n : auto_interval(info.total_steps);
        s.info = std::move(info);
        m_runs.push_back(std::move(s));
    }
}

ProgressPrinter::State& ProgressPrinter::state(int run)
{
    if (run < 0) run = 0;
    while (int(m_runs.size()) <= run) {
        State s;
        s.info.label = "run " + std::to_string(m_runs.size());
        s.every = m_every_n > 0 ? m_every_n : 50;
        m_runs.push_back(std::move(s));
    }
    return m_runs[std::size_t(run)];
}

std::string ProgressPrinter::prefix(const State& s) const
{
    return s.info.label.empty() ? std::string() : "[" + s.info.label + "] ";
}

void ProgressPrinter::on_step(int run, const StepMetrics& m)
{
    State& s = state(run);
    const bool last = s.info.total_steps > 0 && m.step >= s.info.total_steps;
    if (!last && m.step % s.every != 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (!last && s.printed && now - s.last_print < m_min_interval) return;
    s.printed = true;
    s.last_print = now;

    std::string epoch = "epoch " + std::to_string(m.epoch);
    if (s.info.epochs > 0) (epoch += '/') += std::to_string(s.info.epochs);
    std::string step = "step " + std::to_string(m.step);
    if (s.info.total_steps > 0) (step += '/') += std::to_string(s.info.total_steps);
    std::fprintf(m_out, "%s%s %s  loss %.4f  acc %.3f  %.3f ms/step  %.0f %s/s  scale %g%s\n",
                 prefix(s).c_str(), epoch.c_str(), step.c_str(), double(m.loss), double(m.accuracy),
                 double(m.step_ms), m.samples_per_s, s.info.tokens ? "tokens" : "samples",
                 double(m.loss_scale), m.skipped ? "  (skipped)" : "");
    std::fflush(m_out);
}

void ProgressPrinter::on_epoch(int run, const EpochMetrics& m)
{
    State& s = state(run);
    std::string epoch = "epoch " + std::to_string(m.epoch);
    if (s.info.epochs > 0) (epoch += '/') += std::to_string(s.info.epochs);
    if (m.language_model) {
        // Perplexities, as the example prints them; the rate, which the plateau lowers.
        std::string valid = "n/a";
        if (m.valid_loss) {
            char text[64];
            std::snprintf(text, sizeof text, "%.2f", perplexity(*m.valid_loss));
            valid = text;
        }
        std::fprintf(m_out,
                     "%s%s done in %.2f s: train ppl %.2f | valid ppl %s | test ppl %.2f | lr %g"
                     " | %lld skipped steps\n",
                     prefix(s).c_str(), epoch.c_str(), m.seconds, perplexity(m.train_loss),
                     valid.c_str(), perplexity(m.test_loss), double(m.lr),
                     static_cast<long long>(m.skipped_steps));
    } else {
        std::fprintf(m_out,
                     "%s%s done in %.2f s: train loss %.4f acc %.3f | test loss %.4f acc %.3f"
                     " | %lld skipped steps\n",
                     prefix(s).c_str(), epoch.c_str(), m.seconds, double(m.train_loss),
                     double(m.train_accuracy), double(m.test_loss), double(m.test_accuracy),
                     static_cast<long long>(m.skipped_steps));
    }
    std::fflush(m_out);
}

void ProgressPrinter::on_event(int run, const RunEvent& e)
{
    State& s = state(run);
    if (e.kind == RunEvent::Kind::SkippedStep) {
        if (s.skip_lines == k_max_skip_lines) {
            std::fprintf(m_out,
                         "%sfurther skipped steps are not printed; the summary counts them\n",
                         prefix(s).c_str());
        }
        if (s.skip_lines++ >= k_max_skip_lines) {
            std::fflush(m_out);
            return;
        }
    }
    std::string kind;
    switch (e.kind) {
    case RunEvent::Kind::Warning: kind = "warning: "; break;
    case RunEvent::Kind::Error: kind = "error: "; break;
    default: break;
    }
    // Events before the first step (the run's description) carry no step number.
    const std::string at = e.step > 0 ? "step " + std::to_string(e.step) + ": " : std::string();
    std::fprintf(m_out, "%s%s%s%s\n", prefix(s).c_str(), at.c_str(), kind.c_str(),
                 e.message.c_str());
    std::fflush(m_out);
}

} // namespace mixlab::cli
