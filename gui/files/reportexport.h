// The explain report of a finished compare group, from the app's RunStore: the core's
// HTML page as it is, or the same content laid out as a PDF by Qt.
#pragma once
#include "mixlab/report.h"

#include <QImage>
#include <QString>

#include <vector>

class RunStore;

// The groups a report can cover, newest first: those whose runs are all done
// (finished, or stopped with what they recorded).
std::vector<int> reportableGroups(const RunStore &store);
// One line naming a group for a user choosing one: "Group 2: fp32 vs mixed_fp16 ·
// batch 64 · 300 steps · 1m 05s", a stopped or failed run said so.
QString groupDescription(const RunStore &store, int group);
// The report's title: "MixLab report: <model>, group 2 (fp32 vs mixed_fp16, 300 steps)".
QString reportTitle(const RunStore &store, int group);
// A file name for the group's report without suffix: "<model>-group-2-report".
QString reportBaseName(const RunStore &store, int group);

// The report's input for a group (titled by reportTitle): runFactsFromStore's facts, the runs' names and
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
// heading right before a chart stays on the chart's page. A section (from one <h2> to
// the next) wider than the page, a table of long names or many columns, is drawn
// smaller to fit the page's width instead of running off its edge.
bool writeReportPdf(const std::string &html, const QString &path, QString *error);
// The PDF's pages as images (A4 with its margins, white, `dpi` pixels per inch), drawn
// by the same code: for checks and previews. Empty (and *error set) on a bad chart.
std::vector<QImage> reportPageImages(const std::string &html, int dpi, QString *error);
