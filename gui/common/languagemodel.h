// Language models in the app: which models are ones, the vocabulary the designer shows
// when no text corpus is chosen, and how perplexities are written.
#pragma once
#include "mixlab/model_spec.h"

#include <QString>

// A model whose first layer is an embedding: it reads word ids from a text corpus.
// TODO(issue 15): mixlab::is_language_model (model_spec.h) once the engine has it.
bool isLanguageModel(const mixlab::ModelSpec &spec);

// synthetic-text's vocabulary when the run settings name none (DatasetOptions' default):
// what the designer sizes an embedding of "vocab": "dataset" by while images are chosen.
int defaultTextVocabulary();

// A perplexity with about four significant digits: "1.234", "98.76", "1234".
QString perplexityText(double perplexity);
