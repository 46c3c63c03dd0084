// Report export from the app's RunStore, offscreen: a finished two-run group written as
// HTML (the core's page with the runs' names) and as a PDF (a real, multi-page file)
// whose tables stay inside the page; the group the report covers named and chosen in
// File > Export report; and the clear errors for a read-only folder, a wrong suffix and
// an unfinished group.
#include "app/mainwindow.h"
#include "files/reportexport.h"
#include "files/reportgroupdialog.h"
#include "runs/runstore.h"

#include "app_test_mode.h"

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QFileDialog>
#include <QLineEdit>
#include <QListWidget>
#include <QTimer>
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
                   QRandomGenerator &rng, int steps = 300,
                   RunRecord::Status status = RunRecord::Status::Finished)
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
    ctx.environment.backend = mixlab::BackendKind::Cpu;
    ctx.environment.device_name = "CPU (no CUDA device)";
    ctx.environment.compute_capability = "cpu";
    ctx.environment.mixlab_version = "0.1.0";
    store.setContext(id, ctx);
    store.setStatus(id, RunRecord::Status::Running);
    std::vector<mixlab::StepMetrics> recorded;
    for (int s = 1; s <= steps; ++s) {
        mixlab::StepMetrics m;
        m.step = s;
        m.epoch = 1;
        m.loss = float(2.3 * std::exp(-0.01 * s) + 0.2 * rng.generateDouble());
        m.accuracy = float(rng.generateDouble());
        m.loss_scale = policy == mixlab::Policy::MixedFP16 ? 65536.0f : 1.0f;
        m.wall_ms = s * medianMs * 1.1;
        recorded.push_back(m);
    }
    store.appendSteps(id, recorded);
    mixlab::RunSummary sum;
    sum.steps = steps;
    sum.median_step_ms = medianMs;
    sum.mean_step_ms = medianMs * 1.03;
    sum.final_loss_scale = recorded.back().loss_scale;
    sum.final_train_loss = recorded.back().loss;
    store.setSummary(id, sum);
    store.setStatus(id, status);
    return id;
}

// A profiling pass with random (seeded) phase and layer times.
mixlab::StepProfile randomProfile(QRandomGenerator &rng)
{
    mixlab::StepProfile p;
    p.steps = 10;
    for (double &v : p.phase_ms) v = 0.05 + rng.generateDouble();
    for (double v : p.phase_ms) p.device_ms += v;
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

// Answers File > Export report's dialogs as a user would: picks `group` in the group
// list (after noting what it offered), then types `path` into the file dialog.
class ReportDialogAnswerer : public QObject {
public:
    ReportDialogAnswerer(int group, const QString &path) : m_group(group), m_path(path)
    {
        m_timer.setInterval(20);
        connect(&m_timer, &QTimer::timeout, this, &ReportDialogAnswerer::poll);
        m_timer.start();
    }
    int offeredDefault = 0;
    QStringList offered;
    QString suggestedName;

private:
    void poll()
    {
        QWidget *modal = QApplication::activeModalWidget();
        if (auto *choose = qobject_cast<ReportGroupDialog *>(modal)) {
            offeredDefault = choose->group();
            auto *list = choose->findChild<QListWidget *>("reportGroups");
            for (int i = 0; list && i < list->count(); ++i) offered << list->item(i)->text();
            choose->setGroup(m_group);
            QTimer::singleShot(0, choose, &QDialog::accept);
        } else if (auto *file = qobject_cast<QFileDialog *>(modal)) {
            if (auto *name = file->findChild<QLineEdit *>("fileNameEdit")) {
                if (suggestedName.isEmpty()) suggestedName = name->text();
                name->setText(m_path);
            }
            QTimer::singleShot(0, file, [file] { static_cast<QDialog *>(file)->accept(); });
        }
    }

    int m_group;
    QString m_path;
    QTimer m_timer;
};

// Long run names and layer paths, many columns: tables wider than an A4 page.
mixlab::ReportInput wideInput(const RunStore &store, int group)
{
    mixlab::ReportInput input;
    QString error;
    if (!reportInputFromStore(store, group, &input, &error)) qFatal("%s", qPrintable(error));
    input.run_names = {"fp32 baseline b4096 #1", "mixed_fp16 + fp32 head b4096 #2"};
    mixlab::Ceilings ceilings;
    ceilings.fp32_tflops = 51;
    ceilings.fp16_tflops = 750;
    ceilings.copy_gbs = 4203;
    ceilings.measured_at = "2026-11-30 10:00 UTC";
    input.ceilings = ceilings;
    for (mixlab::RunFacts &f : input.runs) {
        QRandomGenerator rng(5);
        f.profile = randomProfile(rng);
        for (mixlab::LayerTime &l : f.profile->layers) {
            l.path = "layer 12 > body 3 > shortcut_projection_block_" + l.path;
            l.tensor_core_note = "K=3000 is not a multiple of 8 for float16 GEMMs";
        }
    }
    return input;
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
        enterAppTestMode();
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
        QVERIFY(text.contains("1.52x"));  // 3.2 / 2.1
        // The report says which group it covers, in its title.
        QVERIFY2(text.contains("<h1>MixLab report: tiny &lt;mlp&gt;, group 1 (fp32 vs mixed_fp16, "
                               "300 steps)</h1>"),
                 qPrintable(text.left(600)));
    }

    // What the group choice shows: every group whose runs are done, newest first, each
    // with its policies, batch, steps, time and a stopped run said so.
    void groupsAndNames()
    {
        RunStore store;
        QRandomGenerator rng(31);
        const int first = store.newGroup();
        addFinishedRun(store, first, mixlab::Policy::FP32, 3.0, rng);
        addFinishedRun(store, first, mixlab::Policy::MixedFP16, 2.0, rng);
        const int stopped = store.newGroup();
        addFinishedRun(store, stopped, mixlab::Policy::FP32, 3.0, rng, 52,
                       RunRecord::Status::Stopped);
        addFinishedRun(store, stopped, mixlab::Policy::MixedBF16, 2.0, rng, 52,
                       RunRecord::Status::Stopped);
        const int running = store.newGroup();
        store.setStatus(store.addRun(mixlab::RunConfig{}, QString::fromUtf8(k_model), running),
                        RunRecord::Status::Running);

        QCOMPARE(reportableGroups(store), std::vector<int>({stopped, first}));
        const QString a = groupDescription(store, first);
        QCOMPARE(a, QStringLiteral("Group 1: fp32 vs mixed_fp16 · batch 32 · 300 steps · 1s"));
        const QString b = groupDescription(store, stopped);
        QVERIFY2(b.startsWith("Group 2: fp32 vs mixed_bf16 · batch 32 · 52 steps") &&
                     b.contains("fp32 stopped at step 52") &&
                     b.contains("mixed_bf16 stopped at step 52"),
                 qPrintable(b));
        QCOMPARE(
            reportTitle(store, stopped),
            QStringLiteral("MixLab report: tiny <mlp>, group 2 (fp32 vs mixed_bf16, 52 steps)"));
        QCOMPARE(reportBaseName(store, stopped), QStringLiteral("tiny-mlp-group-2-report"));

        // The dialog preselects the runs table's group when it can be reported, else the
        // newest finished one.
        QCOMPARE(ReportGroupDialog(store, first).group(), first);
        QCOMPARE(ReportGroupDialog(store, 0).group(), stopped);
        QCOMPARE(ReportGroupDialog(store, running).group(), stopped);
        ReportGroupDialog dialog(store, 0);
        QCOMPARE(dialog.groups(), std::vector<int>({stopped, first}));
        auto *list = dialog.findChild<QListWidget *>("reportGroups");
        QCOMPARE(list->item(1)->text(), a);
        QVERIFY(!ReportGroupDialog(RunStore(), 0).hasGroups());
    }

    // File > Export report: the dialog offers the groups (newest preselected), the file
    // dialog suggests a name naming the group, and the report is the chosen group's.
    void exportMenuChoosesGroup()
    {
        QApplication::setAttribute(Qt::AA_DontUseNativeDialogs);
        MainWindow w;
        w.setConfirmCloseForTesting(false);
        w.show();
        QRandomGenerator rng(32);
        RunStore &store = *w.store();
        for (int g = 0; g < 2; ++g) {
            const int group = store.newGroup();
            addFinishedRun(store, group, mixlab::Policy::FP32, 3.0, rng);
            addFinishedRun(store, group,
                           g == 0 ? mixlab::Policy::MixedFP16 : mixlab::Policy::MixedBF16, 2.0,
                           rng);
        }
        const QString path = m_dir.filePath("chosen.html");
        ReportDialogAnswerer answer(1, path);
        w.findChild<QAction *>("exportReportAction")->trigger();
        QTRY_VERIFY(QFileInfo::exists(path));
        QCOMPARE(answer.offeredDefault, 2);
        QCOMPARE(answer.offered.size(), 2);
        QVERIFY2(answer.offered[0].startsWith("Group 2: fp32 vs mixed_bf16"),
                 qPrintable(answer.offered[0]));
        QCOMPARE(answer.suggestedName, QStringLiteral("tiny-mlp-group-1-report.html"));
        const QString text = QString::fromUtf8(readAll(path));
        QVERIFY(text.contains("group 1 (fp32 vs mixed_fp16, 300 steps)"));
        QVERIFY(!text.contains("mixed_bf16"));
    }

    // Tables wider than the page (long run names and layer paths, the roofline column) are
    // drawn smaller rather than off the page: on every page nothing reaches the right
    // margin. The page images are drawn by the PDF's own code, page for page.
    void pdfTablesFitThePage()
    {
        const std::string html = mixlab::explain_report_html(wideInput(m_store, m_group));
        QString error;
        constexpr int dpi = 60;
        const std::vector<QImage> pages = reportPageImages(html, dpi, &error);
        QVERIFY2(!pages.empty(), qPrintable(error));
        const int margin = int(15 / 25.4 * dpi); // 15 mm
        for (std::size_t i = 0; i < pages.size(); ++i) {
            const QImage &page = pages[i];
            QCOMPARE(page.size(), QSize(int(210 / 25.4 * dpi), int(297 / 25.4 * dpi)));
            int ink = 0, beyond = 0;
            for (int y = 0; y < page.height(); ++y)
                for (int x = 0; x < page.width(); ++x) {
                    if (page.pixel(x, y) == qRgb(255, 255, 255)) continue;
                    ++ink;
                    beyond += x >= page.width() - margin + 1;
                }
            QVERIFY2(ink > 1000, qPrintable(QString("page %1 is blank").arg(i + 1)));
            QVERIFY2(
                beyond == 0,
                qPrintable(
                    QString("page %1: %2 pixels past the right margin").arg(i + 1).arg(beyond)));
        }
        // The PDF has the same pages.
        const QString pdf = m_dir.filePath("wide.pdf");
        QVERIFY2(writeReportPdf(html, pdf, &error), qPrintable(error));
        QCOMPARE(qsizetype(readAll(pdf).count("/Type /Page\n")), qsizetype(pages.size()));
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
                 qPrintable(QString("%1 vs %2")
                                .arg(QFileInfo(withCharts).size())
                                .arg(QFileInfo(without).size())));
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
        QTest::newRow("missing folder pdf")
            << "/nonexistent-mixlab-dir/r.pdf" << true << "Cannot write";
        QTest::newRow("missing folder html")
            << "/nonexistent-mixlab-dir/r.html" << true << "Cannot write";
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
