// Report export from the app's RunStore, offscreen: a finished two-run group written as
// HTML (the core's page with the runs' names) and as a PDF (a real, multi-page file),
// and the clear errors for a read-only folder, a wrong suffix and an unfinished group.
#include "mainwindow.h"
#include "reportexport.h"
#include "runstore.h"

#include <QAction>
#include <QFile>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QStandardPaths>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

namespace {

const char *k_model = R"({"format": "mixlab-model/1", "name": "tiny <mlp>",
    "layers": [{"type": "flatten"}, {"type": "dense", "units": 24, "activation": "relu"},
               {"type": "dense", "units": 10}]})";

// A finished run of 300 steps with noisy, falling losses (seeded).
int addFinishedRun(RunStore &store, int group, mixlab::Policy policy, double medianMs,
                   QRandomGenerator &rng)
{
    mixlab::RunConfig c;
    c.policy = policy;
    c.batch_size = 32;
    c.steps = 300;
    const int id = store.addRun(c, QString::fromUtf8(k_model), group);
    RunContext ctx;
    ctx.input = mixlab::Shape{{4, 4, 1}};
    ctx.classes = 10;
    ctx.datasetName = QStringLiteral("synthetic");
    ctx.environment.backend = "cpu";
    ctx.environment.device_name = "CPU (no CUDA device)";
    ctx.environment.compute_capability = "cpu";
    ctx.environment.mixlab_version = "0.1.0";
    store.setContext(id, ctx);
    store.setStatus(id, RunRecord::Status::Running);
    std::vector<mixlab::StepMetrics> steps;
    for (int s = 1; s <= 300; ++s) {
        mixlab::StepMetrics m;
        m.step = s;
        m.epoch = 1;
        m.loss = float(2.3 * std::exp(-0.01 * s) + 0.2 * rng.generateDouble());
        m.accuracy = float(rng.generateDouble());
        m.loss_scale = policy == mixlab::Policy::MixedFP16 ? 65536.0f : 1.0f;
        steps.push_back(m);
    }
    store.appendSteps(id, steps);
    mixlab::RunSummary sum;
    sum.steps = 300;
    sum.median_step_ms = medianMs;
    sum.mean_step_ms = medianMs * 1.03;
    sum.final_loss_scale = steps.back().loss_scale;
    sum.final_train_loss = steps.back().loss;
    store.setSummary(id, sum);
    store.setStatus(id, RunRecord::Status::Finished);
    return id;
}

// A profiling pass with random (seeded) phase and layer times.
mixlab::StepProfile randomProfile(QRandomGenerator &rng)
{
    mixlab::StepProfile p;
    p.steps = 10;
    for (double &v : p.phase_ms)
        v = 0.05 + rng.generateDouble();
    for (double v : p.phase_ms)
        p.device_ms += v;
    p.step_ms = p.device_ms;
    p.overhead_ms = 0.5 * rng.generateDouble() + 0.01;
    p.wall_ms = p.device_ms + p.overhead_ms;
    p.gpu_busy_fraction = p.device_ms / p.wall_ms;
    for (int i = 0; i < 3; ++i) {
        mixlab::LayerTime l;
        l.path = "layer " + std::to_string(i);
        l.type = i == 0 ? "flatten" : "dense";
        l.forward_ms = 0.01 + rng.generateDouble();
        l.backward_ms = 2 * l.forward_ms;
        l.flops = 1e6 * (i + 1);
        l.bytes = 1e5 * (i + 1);
        l.is_gemm = i > 0;
        p.layers.push_back(l);
    }
    return p;
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestReportExport : public QObject {
    Q_OBJECT

private:
    RunStore m_store;
    int m_group = 0;
    QTemporaryDir m_dir;
    QTemporaryDir m_settingsDir;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QStandardPaths::setTestModeEnabled(true);
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
        QRandomGenerator rng(21);
        m_group = m_store.newGroup();
        addFinishedRun(m_store, m_group, mixlab::Policy::FP32, 3.2, rng);
        const int second = addFinishedRun(m_store, m_group, mixlab::Policy::MixedFP16, 2.1, rng);
        m_store.rename(second, QStringLiteral("half & half"));
    }

    void html()
    {
        const QString path = m_dir.filePath("report.html");
        QString error;
        QVERIFY2(exportReport(m_store, m_group, path, &error), qPrintable(error));
        const QString text = QString::fromUtf8(readAll(path));
        QVERIFY(text.startsWith("<!DOCTYPE html>"));
        QVERIFY(text.contains("tiny &lt;mlp&gt;"));
        QVERIFY(text.contains("half &amp; half"));
        QVERIFY(text.contains("mixed_fp16"));
        QCOMPARE(text.count("<svg "), 2); // loss and step time: the store holds no profiles
        QVERIFY(text.contains("1.52x")); // 3.2 / 2.1
    }

    void pdf()
    {
        const QString path = m_dir.filePath("report.pdf");
        QFile::remove(path);
        QString error;
        QVERIFY2(exportReport(m_store, m_group, path, &error), qPrintable(error));
        const QByteArray bytes = readAll(path);
        QVERIFY(bytes.startsWith("%PDF"));
        QVERIFY2(bytes.size() > 8 * 1024, qPrintable(QString::number(bytes.size())));
        QVERIFY(bytes.trimmed().endsWith("%%EOF"));
    }

    // The PDF pages break around the charts: a page of text alone is smaller than one
    // with both charts painted, so the charts are really in it.
    void pdfHoldsCharts()
    {
        mixlab::ReportInput input;
        QString error;
        QVERIFY2(reportInputFromStore(m_store, m_group, &input, &error), qPrintable(error));
        std::string html = mixlab::explain_report_html(input);
        const QString withCharts = m_dir.filePath("with.pdf");
        QVERIFY2(writeReportPdf(html, withCharts, &error), qPrintable(error));
        // The same page with its chart figures taken out.
        const std::string open = "<figure class=\"chart\">", close = "</figure>";
        int taken = 0;
        for (std::size_t at; (at = html.find(open)) != std::string::npos; ++taken)
            html.erase(at, html.find(close, at) + close.size() - at);
        QCOMPARE(taken, 2);
        const QString without = m_dir.filePath("without.pdf");
        QVERIFY2(writeReportPdf(html, without, &error), qPrintable(error));
        QVERIFY2(QFileInfo(withCharts).size() > QFileInfo(without).size() + 2000,
                 qPrintable(QString("%1 vs %2").arg(QFileInfo(withCharts).size()).arg(QFileInfo(without).size())));
    }

    // Runs with a profiling pass add the phase chart and the layer tables, in both formats.
    void profiledGroup()
    {
        QRandomGenerator rng(22);
        const int group = m_store.newGroup();
        for (mixlab::Policy p : {mixlab::Policy::FP32, mixlab::Policy::MixedFP16}) {
            const int id = addFinishedRun(m_store, group, p, 2.0, rng);
            m_store.setProfile(id, randomProfile(rng));
        }
        const QString html = m_dir.filePath("profiled.html"), pdf = m_dir.filePath("profiled.pdf");
        QString error;
        QVERIFY2(exportReport(m_store, group, html, &error), qPrintable(error));
        const QString text = QString::fromUtf8(readAll(html));
        QCOMPARE(text.count("<svg "), 3);
        QVERIFY(text.contains("Layers by device time"));
        QVERIFY2(exportReport(m_store, group, pdf, &error), qPrintable(error));
        QVERIFY(readAll(pdf).startsWith("%PDF"));
    }

    // File > Export report... is there and asks for nothing until triggered.
    void mainWindowAction()
    {
        MainWindow w;
        w.setConfirmCloseForTesting(false);
        auto *action = w.findChild<QAction *>("exportReportAction");
        QVERIFY(action);
        QVERIFY(action->isEnabled());
        QVERIFY(w.menuBar()->actions().front()->menu()->actions().contains(action));
    }

    void errors_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("finishedGroup");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("missing folder pdf") << "/nonexistent-mixlab-dir/r.pdf" << true << "Cannot write";
        QTest::newRow("missing folder html") << "/nonexistent-mixlab-dir/r.html" << true << "Cannot write";
        QTest::newRow("suffix") << "@dir/r.docx" << true << ".html or .pdf";
        QTest::newRow("unfinished group") << "@dir/r.html" << false << "no finished runs";
    }

    void errors()
    {
        QFETCH(QString, path);
        QFETCH(bool, finishedGroup);
        QFETCH(QString, fragment);
        path.replace("@dir", m_dir.path());
        int group = m_group;
        if (!finishedGroup) {
            group = m_store.newGroup();
            mixlab::RunConfig c;
            m_store.addRun(c, QString::fromUtf8(k_model), group); // queued, never finished
        }
        QString error;
        QVERIFY(!exportReport(m_store, group, path, &error));
        QVERIFY2(error.contains(fragment), qPrintable(error));
        QVERIFY(!QFileInfo::exists(path));
    }
};

QTEST_MAIN(TestReportExport)
#include "tst_reportexport.moc"
