// Language-model helpers shared by the designer, the run views and the files.
#include "common/languagemodel.h"

#include "mixlab/run_config.h"

#include <cmath>

int defaultTextVocabulary() { return mixlab::DatasetOptions{}.synthetic_text_vocab; }

QString perplexityText(double perplexity)
{
    if (!std::isfinite(perplexity)) return QStringLiteral("\u221e");
    if (perplexity >= 1000) return QString::number(std::llround(perplexity));
    return QString::number(perplexity, 'f', perplexity >= 100 ? 1 : perplexity >= 10 ? 2 : 3);
}
