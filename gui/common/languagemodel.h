// Language models in the app (mixlab::is_language_model says which models are ones): the
// vocabulary the designer shows when no text corpus is chosen, and how perplexities are
// written.
#pragma once
#include "mixlab/model_spec.h"

#include <QString>

// synthetic-text's vocabulary when the run settings name none (DatasetOptions' default):
// what the designer sizes an embedding of "vocab": "dataset" by while images are chosen.
int defaultTextVocabulary();

// A perplexity with about four significant digits: "1.234", "98.76", "1234".
QString perplexityText(double perplexity);
