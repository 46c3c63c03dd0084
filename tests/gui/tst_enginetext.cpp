// The app's one set of text helpers for engine names and step times (common/enginetext.h):
// a name read by its view's size, every policy's name, and the step-time precision the
// runs' tables and the profiling log share.
#include "common/enginetext.h"

#include <QSet>
#include <QTest>

#include <string>

class TestEngineText : public QObject {
    Q_OBJECT
private slots:
    void viewIsReadByItsSize();
    void policyNames();
    void msTextPrecision_data();
    void msTextPrecision();
};

void TestEngineText::viewIsReadByItsSize()
{
    // A view into the middle of a string has no NUL after it: only its own characters.
    const std::string text = "mixed_fp16,fp32";
    QCOMPARE(fromView(std::string_view(text).substr(0, 10)), QStringLiteral("mixed_fp16"));
    QCOMPARE(fromView(std::string_view(text).substr(11)), QStringLiteral("fp32"));
    QCOMPARE(fromView({}), QString());
}

void TestEngineText::policyNames()
{
    QSet<QString> seen;
    for (mixlab::Policy p : mixlab::k_all_policies) {
        const QString name = policyText(p);
        QCOMPARE(name.toStdString(), std::string(mixlab::policy_name(p)));
        QCOMPARE(mixlab::parse_policy(name.toStdString()), p);
        seen.insert(name);
    }
    QCOMPARE(seen.size(), qsizetype(std::size(mixlab::k_all_policies)));
}

void TestEngineText::msTextPrecision_data()
{
    QTest::addColumn<double>("ms");
    QTest::addColumn<QString>("text");
    QTest::newRow("sub-ms") << 0.5324 << "0.532";
    QTest::newRow("under 10") << 9.9994 << "9.999";
    QTest::newRow("10 to 100: two decimals") << 12.345678 << "12.35";
    QTest::newRow("just under 100") << 99.994 << "99.99";
    QTest::newRow("100 and up: one decimal") << 123.456 << "123.5";
    QTest::newRow("seconds") << 4321.04 << "4321.0";
}

void TestEngineText::msTextPrecision()
{
    QFETCH(double, ms);
    QFETCH(QString, text);
    QCOMPARE(msText(ms), text);
}

QTEST_APPLESS_MAIN(TestEngineText)
#include "tst_enginetext.moc"
