// AboutDialog's capability facts and ceilings: "not measured" with an empty cache, a
// "Measure now" probe on its worker thread (the GUI keeps running), the cache it leaves
// for the next dialog, a dialog closed mid-probe, and the measured rows all readable in
// the open dialog.
#include "app/aboutdialog.h"

#include "mixlab/backend.h"
#include "mixlab/ceilings.h"

#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

class TestAboutDialog : public QObject {
    Q_OBJECT

private slots:
    void init();
    void cleanup();
    void notMeasuredThenMeasured();
    void closedMidProbe();
    void gpuFacts();
    void measuredRowsStayReadable();

private:
    QTemporaryDir m_dir;
    QByteArray m_oldXdg;
    bool m_hadXdg = false;
};

void TestAboutDialog::init()
{
    // Every test gets an empty cache of its own, never the user's.
    QVERIFY(m_dir.isValid());
    m_hadXdg = qEnvironmentVariableIsSet("XDG_CACHE_HOME");
    m_oldXdg = qgetenv("XDG_CACHE_HOME");
    QFile::remove(m_dir.filePath("mixlab/ceilings.json"));
    qputenv("XDG_CACHE_HOME", m_dir.path().toUtf8());
}

void TestAboutDialog::cleanup()
{
    if (m_hadXdg)
        qputenv("XDG_CACHE_HOME", m_oldXdg);
    else
        qunsetenv("XDG_CACHE_HOME");
}

void TestAboutDialog::notMeasuredThenMeasured()
{
    const mixlab::DeviceInfo cpu = mixlab::make_backend(mixlab::DeviceChoice::CPU)->info();
    AboutDialog dialog(cpu);
    QCOMPARE(dialog.cachePath(), m_dir.filePath("mixlab/ceilings.json"));
    QVERIFY2(dialog.ceilingsText().contains("not measured"), qPrintable(dialog.ceilingsText()));
    QVERIFY(dialog.versionsText().contains("tensor cores: no"));

    auto *button = dialog.findChild<QPushButton *>("measureButton");
    QVERIFY(button);
    QSignalSpy measured(&dialog, &AboutDialog::ceilingsMeasured);
    button->click();
    QVERIFY(dialog.isMeasuring());
    QVERIFY(!button->isEnabled());
    dialog.measureNow(); // a second request while one runs is ignored
    QTRY_COMPARE_WITH_TIMEOUT(measured.count(), 1, 20000);
    QVERIFY(!dialog.isMeasuring());
    QVERIFY(button->isEnabled());
    const QString text = dialog.ceilingsText();
    QVERIFY2(text.contains("fp32 GEMM (no TF32): ") && text.contains("FLOP/s"), qPrintable(text));
    QVERIFY2(text.contains("Device copy: "), qPrintable(text));
    QVERIFY2(!text.contains("failed"), qPrintable(text));
    QVERIFY(QFile::exists(dialog.cachePath()));

    // The next dialog reads what this one measured.
    AboutDialog next(cpu);
    QCOMPARE(next.ceilingsText(), text);
    const auto cached = mixlab::cached_ceilings(cpu, dialog.cachePath().toStdString());
    QVERIFY(cached && cached->fp32_tflops > 0);
}

void TestAboutDialog::closedMidProbe()
{
    const mixlab::DeviceInfo cpu = mixlab::make_backend(mixlab::DeviceChoice::CPU)->info();
    const QString path = m_dir.filePath("mixlab/ceilings.json");
    {
        AboutDialog dialog(cpu);
        dialog.measureNow();
        QVERIFY(dialog.isMeasuring());
    } // destroyed at once, not waiting for the probe
    // The orphaned probe still finishes and fills the cache.
    QTRY_VERIFY_WITH_TIMEOUT(mixlab::cached_ceilings(cpu, path.toStdString()).has_value(), 20000);
}

void TestAboutDialog::gpuFacts()
{
    mixlab::DeviceInfo gpu;
    gpu.backend = mixlab::BackendKind::Cuda;
    gpu.name = "NVIDIA GeForce RTX 2060";
    gpu.cc_major = 7;
    gpu.cc_minor = 5;
    gpu.memory_bytes = std::int64_t(6) << 30;
    gpu.tensor_cores = true;
    gpu.driver_version = "550.54";
    gpu.cublas_version = "13.0.0";
    AboutDialog dialog(gpu);
    const QString text = dialog.versionsText();
    QVERIFY2(text.contains("fp16 tensor cores (7.0+): yes"), qPrintable(text));
    QVERIFY2(text.contains("bf16 tensor cores (8.0+): no"), qPrintable(text));
    QVERIFY2(text.contains("TF32 tensor cores (8.0+): no"), qPrintable(text));
    QVERIFY2(dialog.ceilingsText().contains("not measured"), qPrintable(dialog.ceilingsText()));
}

// "Measure now" in an open dialog turns a one-line note into a table: the dialog grows
// for it (up to most of the screen, then the facts scroll), no row squashed or cut.
void TestAboutDialog::measuredRowsStayReadable()
{
    const mixlab::DeviceInfo cpu = mixlab::make_backend(mixlab::DeviceChoice::CPU)->info();
    AboutDialog dialog(cpu);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    const int before = dialog.height();
    QSignalSpy measured(&dialog, &AboutDialog::ceilingsMeasured);
    dialog.measureNow();
    QTRY_COMPARE_WITH_TIMEOUT(measured.count(), 1, 20000);

    auto *scroll = dialog.findChild<QScrollArea *>("aboutScroll");
    auto *label = dialog.findChild<QLabel *>("ceilingsLabel");
    QVERIFY(scroll && label);
    QWidget *content = scroll->widget();
    QTRY_VERIFY2(label->height() >= label->heightForWidth(label->width()),
                 qPrintable(QStringLiteral("%1 < %2")
                                .arg(label->height())
                                .arg(label->heightForWidth(label->width()))));
    const QRect inContent(label->mapTo(content, QPoint(0, 0)), label->size());
    QVERIFY(content->rect().contains(inContent));
    QVERIFY2(content->width() <= scroll->viewport()->width(),
             qPrintable(
                 QStringLiteral("%1 > %2").arg(content->width()).arg(scroll->viewport()->width())));
    const int room = dialog.screen()->availableGeometry().height() * 9 / 10;
    QVERIFY2(dialog.height() > before || dialog.height() >= room,
             qPrintable(
                 QStringLiteral("%1 -> %2 (room %3)").arg(before).arg(dialog.height()).arg(room)));
    if (dialog.height() < room)
        QCOMPARE(scroll->verticalScrollBar()->maximum(), 0); // all in view without scrolling
}

QTEST_MAIN(TestAboutDialog)
#include "tst_aboutdialog.moc"
