// Run colours: a small fixed palette of dark, saturated colours that stay readable as
// thin lines and text on a white background, picked so a run keeps its colour.
#pragma once
#include "mixlab/policy.h"

#include <QColor>

#include <vector>

// The palette in order; every entry has a contrast ratio of at least 3:1 against white.
const std::vector<QColor> &runPalette();
// The colour of run `runId` (ids from 1): the palette in turn, so neighbours differ.
QColor runColor(int runId);
// One colour per precision policy, for views that colour by policy instead of by run.
QColor policyColor(mixlab::Policy policy);
// WCAG contrast ratio of two colours (1 to 21).
double contrastRatio(const QColor &a, const QColor &b);
