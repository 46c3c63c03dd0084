// The explain report of a finished compare group, from the app's RunStore: the core's
// HTML page as it is, or the same content laid out as a PDF by Qt.
#pragma once
#include "mixlab/report.h"

#include <QString>

class RunStore;

// The report's input for a group: runFactsFromStore's facts, the runs' names and
// configs, explain()'s sentences, the first run's environment and dataset, and the
// device's cached ceilings when `mixlab-cli ceilings` measured them. False (and *error
// set) when the group has no finished runs.
bool reportInputFromStore(const RunStore &store, int group, mixlab::ReportInput *input,
                          QString *error);

// Writes the group's report: a path ending in .html/.htm gets the HTML page, .pdf the PDF.
bool exportReport(const RunStore &store, int group, const QString &path, QString *error);

// The page as UTF-8 through QSaveFile: an unwritable path leaves nothing behind.
bool writeReportHtml(const std::string &html, const QString &path, QString *error);

// The same page as an A4 PDF: the text and tables through QTextDocument (which draws no
// inline SVG), each <figure class="chart"> taken out and painted with QSvgRenderer where
// it stood. Pages break between lines and table rows, never inside a chart, and a
// heading right before a chart stays on the chart's page.
bool writeReportPdf(const std::string &html, const QString &path, QString *error);
