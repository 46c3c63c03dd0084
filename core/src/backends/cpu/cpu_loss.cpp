// CPU cross-entropy for the three output heads: loss sum, correct count and the
// (loss-scaled) gradient of the mean loss with respect to the logits, all in fp32.
#include "backends/cpu/cpu_backend.h"

#include "backends/backend_validate.h"
#include "base/hd_math.h"
#include "mixlab/output_head.h"

#include <algorithm>
#include <cmath>

namespace mixlab::cpu {

void CpuBackend::cross_entropy(OutputHead head, const Buffer& logits, const Buffer& labels_i32,
                               int batch, int classes, const Buffer* scaler, Buffer* dlogits,
                               Buffer& record, std::size_t record_offset)
{
    const char* op = "cross_entropy";
    validate::cross_entropy(k_name, logits, labels_i32, batch, classes, scaler, dlogits, record,
                            record_offset);
    const std::size_t nb = std::size_t(batch), nc = std::size_t(classes);
    const float* z_all = logits.as<float>();
    const auto* labels = labels_i32.as<std::int32_t>();
    float* rec = record.as<float>();
    float* dz_all = dlogits ? dlogits->as<float>() : nullptr;
    const float scale = scaler ? scaler->as<float>()[k_scale] : 1.0f;

    if (m_row.size() < nc) m_row.resize(nc);
    float* z = m_row.data(); // a copy, so dlogits may overwrite the logits in place
    double loss_sum = 0.0;
    int correct = 0;
    for (std::size_t r = 0; r < nb; ++r) {
        std::copy(z_all + r * nc, z_all + (r + 1) * nc, z);
        const std::int32_t t = labels[r];
        require(t >= 0 && std::size_t(t) < nc, op, "label ", t, " is outside the ", classes,
                " classes");

        std::size_t arg = 0; // first maximum wins
        for (std::size_t j = 1; j < nc; ++j)
            if (z[j] > z[arg]) arg = j;
        correct += arg == std::size_t(t) ? 1 : 0;

        float* dz = dz_all ? dz_all + r * nc : nullptr;
        if (head == OutputHead::SigmoidKeras) {
            // Keras: p = sigmoid(z) / sum(sigmoid(z)), clipped, loss = -log p_t.
            float s = 0.0f;
            for (std::size_t j = 0; j < nc; ++j) s += hd::sigmoid(z[j]);
            const float yt = hd::sigmoid(z[t]);
            const float pt = yt / s;
            const float lo = hd::k_keras_epsilon, hi = 1.0f - hd::k_keras_epsilon;
            loss_sum += -std::log(std::clamp(pt, lo, hi));
            if (dz) {
                // The clip passes no gradient once p_t is outside [eps, 1 - eps].
                const bool inside = pt >= lo && pt <= hi;
                for (std::size_t j = 0; j < nc; ++j) {
                    const float y = hd::sigmoid(z[j]);
                    const float onehot = j == std::size_t(t) ? 1.0f : 0.0f;
                    const float dldy = inside ? (pt - onehot) / (pt * s) : 0.0f;
                    dz[j] = dldy * y * (1.0f - y) / float(batch) * scale;
                }
            }
        } else {
            // Logits, and a softmax layer folded into the loss: max-subtracted log-softmax.
            float mx = z[0];
            for (std::size_t j = 1; j < nc; ++j) mx = std::max(mx, z[j]);
            float sum = 0.0f;
            for (std::size_t j = 0; j < nc; ++j) sum += std::exp(z[j] - mx);
            loss_sum += double(mx + std::log(sum) - z[t]);
            if (dz) {
                const float inv = 1.0f / sum;
                for (std::size_t j = 0; j < nc; ++j) {
                    const float p = std::exp(z[j] - mx) * inv;
                    const float onehot = j == std::size_t(t) ? 1.0f : 0.0f;
                    dz[j] = (p - onehot) / float(batch) * scale;
                }
            }
        }
        if (dz) round_span(dlogits->dtype(), dz, nc);
    }

    if (dz_all) {
        rec[record_offset + k_rec_loss_sum] = float(loss_sum);
        rec[record_offset + k_rec_correct] = float(correct);
    } else { // evaluation: accumulate over the test batches
        rec[record_offset + k_rec_loss_sum] += float(loss_sum);
        rec[record_offset + k_rec_correct] += float(correct);
    }
}

} // namespace mixlab::cpu
