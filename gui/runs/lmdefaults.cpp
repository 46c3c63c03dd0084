// Field-by-field language-model defaults and their undoing.
#include "runs/lmdefaults.h"

#include "common/enginetext.h"

#include <QCoreApplication>

namespace {

QString tr(const char *text) { return QCoreApplication::translate("LmDefaults", text); }

constexpr RunField k_fields[] = {RunField::Dataset,   RunField::Batch,        RunField::Bptt,
                                 RunField::Optimizer, RunField::LearningRate, RunField::Momentum,
                                 RunField::Clip,      RunField::LrSchedule};

constexpr const char *k_syntheticText = "synthetic-text";

QString number(float v) { return QString::number(double(v), 'g', 6); }

} // namespace

void copyRunField(RunField f, const mixlab::RunConfig &from, mixlab::RunConfig &to)
{
    switch (f) {
    case RunField::Dataset: to.dataset.name = from.dataset.name; break;
    case RunField::Batch: to.batch_size = from.batch_size; break;
    case RunField::Bptt: to.bptt = from.bptt; break;
    case RunField::Optimizer:
        to.optimizer.type = from.optimizer.type;
        to.optimizer.nesterov = from.optimizer.nesterov;
        to.optimizer.weight_decay = from.optimizer.weight_decay;
        break;
    case RunField::LearningRate: to.optimizer.lr = from.optimizer.lr; break;
    case RunField::Momentum: to.optimizer.momentum = from.optimizer.momentum; break;
    case RunField::Clip: to.optimizer.clip_norm = from.optimizer.clip_norm; break;
    case RunField::LrSchedule: to.lr_schedule = from.lr_schedule; break;
    }
}

bool sameRunField(RunField f, const mixlab::RunConfig &a, const mixlab::RunConfig &b)
{
    const mixlab::RunConfig &c = b;
    switch (f) {
    case RunField::Dataset: return a.dataset.name == c.dataset.name;
    case RunField::Batch: return a.batch_size == c.batch_size;
    case RunField::Bptt: return a.bptt == c.bptt;
    case RunField::Optimizer:
        return a.optimizer.type == c.optimizer.type &&
               a.optimizer.nesterov == c.optimizer.nesterov &&
               a.optimizer.weight_decay == c.optimizer.weight_decay;
    case RunField::LearningRate: return a.optimizer.lr == c.optimizer.lr;
    case RunField::Momentum: return a.optimizer.momentum == c.optimizer.momentum;
    case RunField::Clip: return a.optimizer.clip_norm == c.optimizer.clip_norm;
    case RunField::LrSchedule:
        return a.lr_schedule.type == c.lr_schedule.type &&
               a.lr_schedule.factor == c.lr_schedule.factor;
    }
    return true;
}

QString runFieldText(RunField f, const mixlab::RunConfig &c)
{
    switch (f) {
    case RunField::Dataset: return QString::fromStdString(c.dataset.name);
    case RunField::Batch: return tr("batch %1").arg(c.batch_size);
    case RunField::Bptt: return tr("bptt %1").arg(c.bptt);
    case RunField::Optimizer: return fromView(mixlab::optimizer_name(c.optimizer.type));
    case RunField::LearningRate: return tr("lr %1").arg(number(c.optimizer.lr));
    case RunField::Momentum: return tr("momentum %1").arg(number(c.optimizer.momentum));
    case RunField::Clip:
        return c.optimizer.clip_norm > 0 ? tr("clip %1").arg(number(c.optimizer.clip_norm))
                                         : tr("no clipping");
    case RunField::LrSchedule:
        return c.lr_schedule.type == mixlab::LrSchedule::Plateau
                   ? tr("lr \u00d7%1 on a plateau").arg(number(c.lr_schedule.factor))
                   : tr("constant lr");
    }
    return {};
}

QString runFieldsText(const std::set<RunField> &fields, const mixlab::RunConfig &c)
{
    QStringList parts;
    for (RunField f : k_fields)
        if (fields.count(f)) parts << runFieldText(f, c);
    return parts.join(QStringLiteral(", "));
}

LmDefaultsChange languageModelDefaults(const mixlab::RunConfig &now,
                                       const std::set<RunField> &edited, bool textDataset)
{
    mixlab::RunConfig defaults = mixlab::with_language_model_defaults(now);
    defaults.dataset.name = textDataset ? now.dataset.name : std::string(k_syntheticText);
    LmDefaultsChange out;
    out.config = now;
    for (RunField f : k_fields) {
        if (sameRunField(f, now, defaults)) continue;
        if (f != RunField::Dataset && edited.count(f)) {
            out.kept.insert(f);
            continue;
        }
        copyRunField(f, defaults, out.config);
        out.applied.insert(f);
    }
    return out;
}

mixlab::RunConfig restoreBeforeLanguageModel(const mixlab::RunConfig &now,
                                             const mixlab::RunConfig &before,
                                             const std::set<RunField> &applied,
                                             const std::set<RunField> &edited)
{
    mixlab::RunConfig out = now;
    for (RunField f : applied) {
        if (edited.count(f)) continue;
        if (f == RunField::Dataset && now.dataset.name != k_syntheticText) continue;
        copyRunField(f, before, out);
    }
    return out;
}
