// Language models in the app: the designer's embedding and lstm (palette, fields, token
// shapes and parameter counts of word-lm-small, the data mismatch said), the run panel's
// switch to the word-language-model example's settings, and a short CPU compare on a tiny
// synthetic-text that turns the accuracy chart into perplexity, fills the runs table's
// perplexity columns and writes a sample per run.
#include "app/mainwindow.h"
#include "charts/chartpanel.h"
#include "charts/metricchart.h"
#include "designer/layerpalette.h"
#include "designer/layerpropertyeditor.h"
#include "designer/layertree.h"
#include "designer/modeldesigner.h"
#include "files/experiment.h"
#include "files/logexport.h"
#include "runs/lmdefaults.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "runs/runstable.h"
#include "runs/runstablemodel.h"
#include "runs/runstore.h"
#include "runs/samplepanel.h"

#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_config.h"
#include "mixlab/run_log.h"
#include "mixlab/trainer.h"

#include "app_test_mode.h"

#include <QFile>
#include <QLabel>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QTreeWidget>
#include <QUndoStack>

#include <cmath>

namespace {

constexpr int k_runTimeoutMs = 120000;

// Embedding 16 (vocab from the corpus), one LSTM layer of 16, a decoder per word.
mixlab::ModelSpec tinyLanguageModel()
{
    return mixlab::parse_model_spec(R"({"format": "mixlab-model/1", "name": "tiny-lm",
        "layers": [{"type": "embedding", "vocab": "dataset", "dim": 16},
                   {"type": "lstm", "hidden": 16, "layers": 1},
                   {"type": "dense", "units": "vocab"}]})");
}

// A tiny synthetic-text on the CPU: 2000 training tokens of 50 words, 4 columns, windows
// of 5: 100 steps an epoch.
mixlab::RunConfig tinyTextConfig(mixlab::RunConfig c)
{
    c.dataset.name = "synthetic-text";
    c.dataset.synthetic_text_tokens = 2000;
    c.dataset.synthetic_text_vocab = 50;
    c.batch_size = 4;
    c.bptt = 5;
    c.epochs = 2;
    c.steps = 0;
    c.device = mixlab::DeviceChoice::CPU;
    c.seed = 3;
    return c;
}

// The texts of the tree's rows (every column), for the shapes the designer shows.
QStringList treeTexts(const QTreeWidget *tree, int column)
{
    QStringList out;
    for (int i = 0; i < tree->topLevelItemCount(); ++i) out << tree->topLevelItem(i)->text(column);
    return out;
}

} // namespace

class TestLanguageModel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void paletteHasLanguageModelLayers();
    void wordLmSmallShowsTokenShapes();
    void dataMismatchIsSaid();
    void runPanelSwitchesToLanguageModelDefaults();
    void shortCompareShowsPerplexityAndSamples();

private:
    QTemporaryDir m_settingsDir;
};

void TestLanguageModel::initTestCase()
{
    QVERIFY(m_settingsDir.isValid());
    enterAppTestMode();
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
}

void TestLanguageModel::paletteHasLanguageModelLayers()
{
    ModelDesigner d;
    const QStringList entries = d.palette()->entryNames();
    QVERIFY(entries.contains(QStringLiteral("embedding")));
    QVERIFY(entries.contains(QStringLiteral("lstm")));
    // The tooltips say why the sizes matter.
    auto *lstm = d.palette()->findChild<QToolButton *>(QStringLiteral("palette_lstm"));
    QVERIFY(lstm);
    QVERIFY(lstm->toolTip().contains(QStringLiteral("multiples of 8")));

    d.setSpec(mixlab::ModelSpec{});
    QVERIFY(d.palette()->activate(QStringLiteral("embedding")));
    QVERIFY(d.palette()->activate(QStringLiteral("lstm")));
    QCOMPARE(d.spec().layers.size(), std::size_t(2));
    QCOMPARE(d.spec().layers[0].type, mixlab::LayerType::Embedding);
    QCOMPARE(d.spec().layers[0].vocab, mixlab::k_vocab_dataset);
    QCOMPARE(d.spec().layers[0].dim, 200);
    QCOMPARE(d.spec().layers[1].type, mixlab::LayerType::Lstm);
    QCOMPARE(d.spec().layers[1].hidden, 200);

    // The property editor edits the lstm's hidden size as one undoable step.
    d.selectRow(1);
    auto *hidden = d.propertyEditor()->findChild<QSpinBox *>(QStringLiteral("hidden"));
    QVERIFY(hidden && hidden->isVisibleTo(d.propertyEditor()));
    hidden->setValue(256);
    QCOMPARE(d.spec().layers[1].hidden, 256);
    d.undoStack()->undo();
    QCOMPARE(d.spec().layers[1].hidden, 200);
}

void TestLanguageModel::wordLmSmallShowsTokenShapes()
{
    ModelDesigner d;
    d.setInput(mixlab::Shape::tokens(), 10000); // synthetic-text, its default vocabulary
    QVERIFY(d.presetNames().contains(QStringLiteral("word-lm-small")));
    QVERIFY(d.loadPreset(QStringLiteral("word-lm-small")));
    QVERIFY2(d.isValid(), qPrintable(d.validationMessage()));
    QVERIFY(d.dataMismatch().isEmpty());
    const mixlab::Graph &g = *d.graph();
    // embedding 10000 x 200; two LSTM layers of 4H(I + H + 2) = 800 x 402; decoder
    // 200 x 10000 + 10000.
    QCOMPARE(g.total_params, std::int64_t(2000000 + 2 * 321600 + 2010000));
    QCOMPARE(QString::fromStdString(g.layers[0].in.to_string()), QStringLiteral("T tokens"));
    const QStringList shapes = treeTexts(d.layerTree(), LayerTree::OutputColumn);
    QVERIFY2(shapes.count(QStringLiteral("T x 200")) >= 3, qPrintable(shapes.join(" | ")));
    QVERIFY2(shapes.contains(QStringLiteral("T x 10000")), qPrintable(shapes.join(" | ")));
    QVERIFY(d.findChild<QLabel *>(QStringLiteral("totals"))
                ->text()
                .contains(QStringLiteral("per token")));
    // "vocab": "dataset" and "units": "vocab" show the vocabulary they stand for, greyed.
    d.selectRow(0);
    auto *vocab = d.propertyEditor()->findChild<QSpinBox *>(QStringLiteral("vocab"));
    QVERIFY(vocab && !vocab->isEnabled());
    QCOMPARE(vocab->value(), 10000);
    d.selectRow(int(g.layers.size()) - 1);
    auto *units = d.propertyEditor()->findChild<QSpinBox *>(QStringLiteral("units"));
    QVERIFY(units && !units->isEnabled());
    QCOMPARE(units->value(), 10000);
}

void TestLanguageModel::dataMismatchIsSaid()
{
    ModelDesigner d;
    d.setSpec(tinyLanguageModel());
    d.setInput(mixlab::Shape{{32, 32, 3}}, 10); // images chosen
    QVERIFY(d.isValid()); // the figures are there, on synthetic-text's vocabulary
    QCOMPARE(d.graph()->classes, 10000);
    QVERIFY(d.dataMismatch().contains(QStringLiteral("synthetic-text")));
    auto *label = d.findChild<QLabel *>(QStringLiteral("dataMismatch"));
    QVERIFY(label->isVisibleTo(&d));

    d.setInput(mixlab::Shape::tokens(), 50);
    QVERIFY(d.dataMismatch().isEmpty());
    QVERIFY(!label->isVisibleTo(&d));
    QCOMPARE(d.graph()->classes, 50);

    // The reverse: an image model with a corpus chosen.
    d.setSpec(mixlab::parse_model_spec(R"({"format": "mixlab-model/1", "layers": [
        {"type": "flatten"}, {"type": "dense", "units": 10}]})"));
    QVERIFY(d.isValid());
    QVERIFY(d.dataMismatch().contains(QStringLiteral("text corpus")));
}

void TestLanguageModel::runPanelSwitchesToLanguageModelDefaults()
{
    RunPanel p;
    p.setConfig(mixlab::RunConfig{}); // sgd lr 0.01, momentum 0.9, batch 32
    const mixlab::RunConfig before = p.config();
    // A hand edit the defaults must keep.
    p.findChild<QSpinBox *>(QStringLiteral("batchSpin"))->setValue(64);

    p.setLanguageModel(true);
    const mixlab::RunConfig lm = p.config();
    QCOMPARE(lm.dataset.name, std::string("synthetic-text"));
    QVERIFY(p.isTextDataset());
    QCOMPARE(p.datasetClasses(), mixlab::DatasetOptions{}.synthetic_text_vocab);
    QCOMPARE(lm.optimizer.lr, 20.0f);
    QCOMPARE(lm.optimizer.momentum, 0.0f);
    QCOMPARE(lm.optimizer.clip_norm, 0.25f);
    QCOMPARE(lm.lr_schedule.type, mixlab::LrSchedule::Plateau);
    QCOMPARE(lm.bptt, 35);
    QCOMPARE(lm.batch_size, 64); // kept
    QVERIFY(p.findChild<QWidget *>(QStringLiteral("lmSettings"))->isVisibleTo(&p));
    const QString note = p.lmDefaultsNote();
    QVERIFY2(note.contains(QStringLiteral("lr 20")) && note.contains(QStringLiteral("clip 0.25")),
             qPrintable(note));
    QVERIFY2(note.contains(QStringLiteral("Kept as you set them: batch 64")), qPrintable(note));

    // Settings set over the defaults (the app's --batch after a preset) leave no note
    // naming values they replaced.
    {
        RunPanel q;
        q.setConfig(mixlab::RunConfig{});
        q.setLanguageModel(true);
        QVERIFY(q.lmDefaultsNote().contains(QStringLiteral("batch 20")));
        mixlab::RunConfig c = q.config();
        c.batch_size = 16;
        q.setConfig(c);
        QVERIFY2(!q.lmDefaultsNote().contains(QStringLiteral("batch 20")),
                 qPrintable(q.lmDefaultsNote()));
        QCOMPARE(q.config().batch_size, 16);
    }

    // Once: a second call changes nothing, an edit after it stays.
    p.findChild<QSpinBox *>(QStringLiteral("bpttSpin"))->setValue(20);
    p.setLanguageModel(true);
    QCOMPARE(p.config().bptt, 20);

    // Back to an image model: what the defaults replaced comes back.
    p.setLanguageModel(false);
    const mixlab::RunConfig back = p.config();
    QCOMPARE(back.dataset.name, before.dataset.name);
    QCOMPARE(back.optimizer.lr, before.optimizer.lr);
    QCOMPARE(back.optimizer.momentum, before.optimizer.momentum);
    QCOMPARE(back.optimizer.clip_norm, 0.0f);
    QCOMPARE(back.batch_size, 64);
    QVERIFY(!p.findChild<QWidget *>(QStringLiteral("lmSettings"))->isVisibleTo(&p));
}

void TestLanguageModel::shortCompareShowsPerplexityAndSamples()
{
    MainWindow w;
    w.setConfirmCloseForTesting(false);
    w.resize(1400, 900);
    w.show();
    // Before any run the charts and the table are the designed model's kind: an image
    // model's accuracy, then a language model's perplexity, and back.
    QVERIFY(!w.chartPanel()->perplexityMode());
    QVERIFY(!w.runsTable()->isColumnHidden(RunsTableModel::TestAccuracy));
    w.designer()->setSpec(tinyLanguageModel());
    QVERIFY(w.runPanel()->isLanguageModel());
    QVERIFY(w.chartPanel()->perplexityMode());
    QVERIFY(w.runsTable()->isColumnHidden(RunsTableModel::TestAccuracy));
    QVERIFY(!w.runsTable()->isColumnHidden(RunsTableModel::TestPerplexity));
    QVERIFY(w.designer()->loadPreset(QStringLiteral("seed-mlp")));
    QVERIFY(!w.chartPanel()->perplexityMode());
    QVERIFY(!w.runsTable()->isColumnHidden(RunsTableModel::TestAccuracy));
    w.designer()->setSpec(tinyLanguageModel());
    w.runPanel()->setConfig(tinyTextConfig(w.runPanel()->config()));
    w.runPanel()->setComparePolicies({mixlab::Policy::FP32, mixlab::Policy::MixedFP16});
    TextSampling sampling;
    sampling.words = 12;
    w.runPanel()->setTextSampling(sampling);
    QVERIFY2(!w.runPanel()->isStartBlocked(), qPrintable(w.runPanel()->startBlockReason()));
    QCOMPARE(w.designer()->graph()->classes, 50);

    w.startCompare();
    QVERIFY(w.controller()->isRunning());
    QTRY_VERIFY_WITH_TIMEOUT(!w.controller()->isRunning(), k_runTimeoutMs);

    const std::vector<int> ids = w.store()->runIds();
    QCOMPARE(ids.size(), std::size_t(2));
    for (int id : ids) {
        const RunRecord *r = w.store()->run(id);
        QVERIFY2(r->status == RunRecord::Status::Finished, qPrintable(r->failure));
        QVERIFY(r->languageModel);
        QCOMPARE(r->epochs.size(), std::size_t(2));
        QVERIFY(r->epochs.back().valid_loss.has_value());
        QVERIFY(r->sample.has_value());
        QVERIFY2(r->sample->failure.isEmpty(), qPrintable(r->sample->failure));
        // synthetic-text has no <eos>: the words come separated by spaces.
        QCOMPARE(r->sample->text.split(QLatin1Char(' '), Qt::SkipEmptyParts).size(), 12);
    }

    // Charts: perplexity, on a log axis, with train, valid and test per epoch.
    ChartPanel *charts = w.chartPanel();
    charts->redrawNow();
    QVERIFY(charts->perplexityMode());
    MetricChart *ppl = charts->chart(QStringLiteral("accuracy"));
    QCOMPARE(ppl->title(), QStringLiteral("Perplexity"));
    QVERIFY(ppl->isLogY());
    QCOMPARE(ppl->runSeries(ids.front()).size(), 5); // raw, smoothed, train, valid, test
    QCOMPARE(charts->chart(QStringLiteral("throughput"))->yTitle(), QStringLiteral("tokens/s"));
    const MetricChart::Readout readout = charts->readout(QStringLiteral("accuracy"), 200);
    QVERIFY(!readout.rows.empty());
    QVERIFY2(readout.rows.front().value.contains(QStringLiteral("valid")),
             qPrintable(readout.rows.front().value));

    // Runs table: perplexities where a classifier shows accuracy.
    RunsTable *table = w.runsTable();
    RunsTableModel *model = table->tableModel();
    QVERIFY(!table->isColumnHidden(RunsTableModel::TestPerplexity));
    QVERIFY(!table->isColumnHidden(RunsTableModel::ValidPerplexity));
    QVERIFY(table->isColumnHidden(RunsTableModel::TestAccuracy));
    const RunRecord *first = w.store()->run(ids.front());
    const double expected = mixlab::perplexity(*first->summary->final_test_loss);
    const QString shown = model->data(model->index(0, RunsTableModel::TestPerplexity)).toString();
    QVERIFY2(std::abs(shown.toDouble() - expected) <= 0.01 * expected, qPrintable(shown));
    // A 50-word source: a trained model beats guessing uniformly (perplexity 50).
    QVERIFY2(expected < 50, qPrintable(shown));
    QVERIFY(!model->data(model->index(0, RunsTableModel::FinalLr)).toString().isEmpty());
    // What the number reads against: the source's floor and the count model, in the
    // tooltip, kept in the experiment file and in an exported log.
    QVERIFY(first->context && first->context->perplexityReferences &&
            first->context->perplexityReferences->floor &&
            first->context->perplexityReferences->trigram);
    const QString tip =
        model->data(model->index(0, RunsTableModel::TestPerplexity), Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QStringLiteral("the source's floor")) &&
                 tip.contains(QStringLiteral("trigram count model")),
             qPrintable(tip));
    QTemporaryDir files;
    QString error;
    const QString logPath = files.filePath(QStringLiteral("lm.json"));
    QVERIFY2(exportLogs(*w.store(), ids, logPath, &error), qPrintable(error));
    QFile logFile(logPath);
    QVERIFY(logFile.open(QIODevice::ReadOnly));
    const mixlab::RunLog exported = mixlab::RunLog::parse(logFile.readAll().toStdString());
    QVERIFY(exported.perplexity_references());
    QCOMPARE(*exported.perplexity_references()->floor,
             *first->context->perplexityReferences->floor);
    const QString experimentPath = files.filePath(QStringLiteral("lm.mixlab.json"));
    QVERIFY2(saveExperiment(experimentPath, ExperimentFile{}, *w.store(), &error),
             qPrintable(error));
    ExperimentFile reopened;
    RunStore reopenedRuns;
    QVERIFY2(loadExperiment(experimentPath, &reopened, &reopenedRuns, &error), qPrintable(error));
    const RunRecord *back = reopenedRuns.run(reopenedRuns.runIds().front());
    QVERIFY(back->context && back->context->perplexityReferences);
    QCOMPARE(*back->context->perplexityReferences->trigram,
             *first->context->perplexityReferences->trigram);

    // The samples, with each run's name and policy, copyable.
    SamplePanel *samples = w.samplePanel();
    QCOMPARE(samples->sampleCount(), 2);
    QVERIFY(samples->isVisible()); // its tab came forward
    const QString text = samples->plainText();
    QVERIFY(text.contains(QStringLiteral("fp32")) && text.contains(QStringLiteral("mixed_fp16")));
    QVERIFY(text.contains(w.store()->run(ids.back())->sample->text));
    QVERIFY2(text.contains(QStringLiteral("the source's floor")), qPrintable(text));
}

QTEST_MAIN(TestLanguageModel)
#include "tst_language_model.moc"
