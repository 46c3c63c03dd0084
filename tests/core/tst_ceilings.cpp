// The ceilings probe on the CPU backend, its per-device cache (round trip, another
// device's key, corrupt and unwritable files), the roofline arithmetic, the policy ->
// ceiling mapping, capability facts, and `mixlab-cli ceilings`.
#include "mixlab/capabilities.h"
#include "mixlab/ceilings.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace mixlab;
using Json = nlohmann::json;

namespace {

// Small enough that a probe costs a few milliseconds; the cache logic does not care.
ProbeSizes small_sizes()
{
    ProbeSizes s;
    s.gemm_size = 96;
    s.copy_bytes = std::size_t(1) << 20;
    s.repetitions = 2;
    return s;
}

Json read_json(const QString& path)
{
    std::ifstream in(path.toStdString());
    std::stringstream text;
    text << in.rdbuf();
    return Json::parse(text.str());
}

void write_text(const QString& path, const QByteArray& text)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(text);
}

void write_json(const QString& path, const Json& j)
{
    write_text(path, QByteArray::fromStdString(j.dump(2)));
}

} // namespace

class TestCeilings : public QObject {
    Q_OBJECT

private slots:
    void probeGivesPositiveNumbers();
    void defaultProbeIsQuickOnCpu();
    void cacheRoundTrip();
    void changedKeyReprobes();
    void refreshReprobes();
    void corruptCacheIsRewritten_data();
    void corruptCacheIsRewritten();
    void unwritableCacheIsReported();
    void defaultCachePath();
    void rooflineFloor_data();
    void rooflineFloor();
    void rooflineRejectsNegativeWork();
    void policyCeiling();
    void capabilityFacts();
    void cliCeilings();
};

void TestCeilings::probeGivesPositiveNumbers()
{
    auto backend = make_backend(DeviceChoice::CPU);
    const Ceilings c = probe_ceilings(*backend, small_sizes());
    // The CPU backend emulates every format, so every ceiling is measured there.
    QVERIFY(c.fp32_tflops > 0);
    QVERIFY(c.tf32_tflops > 0);
    QVERIFY(c.fp16_tflops > 0);
    QVERIFY(c.bf16_tflops > 0);
    QVERIFY(c.copy_gbs > 0);
    QVERIFY(std::isfinite(c.fp32_tflops) && std::isfinite(c.copy_gbs));
    // A 2-core host does not reach a PFLOP/s or 10 TB/s: a unit slip would.
    QVERIFY(c.fp32_tflops < 100);
    QVERIFY(c.copy_gbs < 10000);
    QCOMPARE(c.backend, BackendKind::Cpu);
    QCOMPARE(c.device_key, ceilings_device_key(backend->info()));
    QCOMPARE(c.gemm_size, 96);
    QCOMPARE(c.copy_bytes, std::size_t(1) << 20);
    QCOMPARE(c.repetitions, 2);
    QVERIFY(!c.from_cache);
    QVERIFY(QDateTime::fromString(QString::fromStdString(c.measured_at), Qt::ISODate).isValid());
    QVERIFY(c.measured_at.back() == 'Z');
}

void TestCeilings::defaultProbeIsQuickOnCpu()
{
    auto backend = make_backend(DeviceChoice::CPU);
    const ProbeSizes d = default_probe_sizes(backend->info());
    QCOMPARE(d.gemm_size, 512);
    QCOMPARE(d.copy_bytes, std::size_t(64) << 20);
    const Ceilings c = probe_ceilings(*backend);
    QCOMPARE(c.gemm_size, 512);
    QVERIFY(c.fp32_tflops > 0 && c.copy_gbs > 0);
    QVERIFY(c.probe_seconds > 0);
    // The sizes above are what keeps the probe quick (well under a second on an idle
    // 2-core machine). Its wall time is not asserted: README's test command on a clean
    // Debian 12 root failed here at 7.3 s against a 5 s bound while another build shared
    // the two cores (2026-12-03), and a test's verdict must not hang on the host's load.

    DeviceInfo gpu;
    gpu.backend = BackendKind::Cuda;
    gpu.memory_bytes = std::int64_t(80) << 30;
    QCOMPARE(default_probe_sizes(gpu).gemm_size, 8192);
    QCOMPARE(default_probe_sizes(gpu).copy_bytes, std::size_t(1) << 30);
    gpu.memory_bytes = std::int64_t(4) << 30; // a small card keeps both buffers in 1/8
    QCOMPARE(default_probe_sizes(gpu).copy_bytes, std::size_t(256) << 20);
}

void TestCeilings::cacheRoundTrip()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("sub/dir/ceilings.json"); // folders are created
    auto backend = make_backend(DeviceChoice::CPU);
    const DeviceInfo info = backend->info();
    QVERIFY(!cached_ceilings(info, path.toStdString()));

    CeilingsRequest req;
    req.sizes = small_sizes();
    const Ceilings first = ceilings_for(*backend, path.toStdString(), req);
    QVERIFY(!first.from_cache);
    QVERIFY(first.cache_error.empty());
    QVERIFY(QFile::exists(path));
    const Json doc = read_json(path);
    QCOMPARE(doc.at("format").get<std::string>(), std::string("mixlab-ceilings/1"));
    QVERIFY(doc.at("devices").contains(first.device_key));

    const Ceilings second = ceilings_for(*backend, path.toStdString(), req);
    QVERIFY(second.from_cache);
    QCOMPARE(second.fp32_tflops, first.fp32_tflops); // JSON keeps doubles exactly
    QCOMPARE(second.tf32_tflops, first.tf32_tflops);
    QCOMPARE(second.fp16_tflops, first.fp16_tflops);
    QCOMPARE(second.bf16_tflops, first.bf16_tflops);
    QCOMPARE(second.copy_gbs, first.copy_gbs);
    QCOMPARE(second.measured_at, first.measured_at);
    QCOMPARE(second.gemm_size, first.gemm_size);

    // A value planted in the file comes back: the second call read it, it did not probe.
    Json planted = read_json(path);
    planted["devices"][first.device_key]["fp32_tflops"] = 123.25;
    write_json(path, planted);
    QCOMPARE(ceilings_for(*backend, path.toStdString(), req).fp32_tflops, 123.25);
    const auto cached = cached_ceilings(info, path.toStdString());
    QVERIFY(cached && cached->from_cache);
    QCOMPARE(cached->fp32_tflops, 123.25);
}

void TestCeilings::changedKeyReprobes()
{
    QTemporaryDir dir;
    const QString path = dir.filePath("ceilings.json");
    auto backend = make_backend(DeviceChoice::CPU);
    CeilingsRequest req;
    req.sizes = small_sizes();
    const Ceilings ours = ceilings_for(*backend, path.toStdString(), req);

    // The file now holds only another device (say, the same GPU under an older driver).
    Json doc = read_json(path);
    const std::string other = "cuda | NVIDIA H200 | driver 12.8 | cuBLAS 12.8.3";
    Json entry = doc["devices"][ours.device_key];
    entry["device_key"] = other;
    entry["fp32_tflops"] = 777.0;
    doc["devices"] = Json::object({{other, entry}});
    write_json(path, doc);

    const Ceilings again = ceilings_for(*backend, path.toStdString(), req);
    QVERIFY(!again.from_cache);
    QVERIFY(again.fp32_tflops != 777.0);
    const Json after = read_json(path);
    QVERIFY(after["devices"].contains(ours.device_key));
    QVERIFY(after["devices"].contains(other)); // several devices share one cache
    QCOMPARE(after["devices"][other]["fp32_tflops"].get<double>(), 777.0);

    // An entry filed under our key but naming another device is not ours either.
    doc = read_json(path);
    doc["devices"][ours.device_key]["device_key"] = other;
    write_json(path, doc);
    QVERIFY(!cached_ceilings(backend->info(), path.toStdString()));
    QVERIFY(!ceilings_for(*backend, path.toStdString(), req).from_cache);
}

void TestCeilings::refreshReprobes()
{
    QTemporaryDir dir;
    const QString path = dir.filePath("ceilings.json");
    auto backend = make_backend(DeviceChoice::CPU);
    CeilingsRequest req;
    req.sizes = small_sizes();
    const Ceilings first = ceilings_for(*backend, path.toStdString(), req);
    Json doc = read_json(path);
    doc["devices"][first.device_key]["copy_gbs"] = 4321.0;
    write_json(path, doc);
    req.refresh = true;
    const Ceilings fresh = ceilings_for(*backend, path.toStdString(), req);
    QVERIFY(!fresh.from_cache);
    QVERIFY(fresh.copy_gbs != 4321.0);
    QCOMPARE(read_json(path)["devices"][first.device_key]["copy_gbs"].get<double>(),
             fresh.copy_gbs);
}

void TestCeilings::corruptCacheIsRewritten_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::newRow("empty file") << QByteArray();
    QTest::newRow("not json") << QByteArray("\x01\x02 ceilings? \xff\xfe");
    QTest::newRow("truncated") << QByteArray(
        "{\"format\": \"mixlab-ceilings/1\", \"devices\": {\"cpu");
    QTest::newRow("an array") << QByteArray("[1, 2, 3]");
    QTest::newRow("another format")
        << QByteArray("{\"format\": \"mixlab-run/1\", \"devices\": {}}");
    QTest::newRow("devices not an object")
        << QByteArray("{\"format\": \"mixlab-ceilings/1\", \"devices\": 7}");
    // Entries under the right key, broken in the field: filled in below with the key.
    QTest::newRow("entry missing a field") << QByteArray("@missing");
    QTest::newRow("entry with a string") << QByteArray("@string");
    QTest::newRow("entry negative") << QByteArray("@negative");
}

void TestCeilings::corruptCacheIsRewritten()
{
    QFETCH(QByteArray, content);
    QTemporaryDir dir;
    const QString path = dir.filePath("ceilings.json");
    auto backend = make_backend(DeviceChoice::CPU);
    const std::string key = ceilings_device_key(backend->info());
    if (content.startsWith('@')) {
        Json entry = {
            {"device_key", key},  {"backend", "cpu"},   {"device_name", "x"},
            {"fp32_tflops", 1.0}, {"tf32_tflops", 1.0}, {"fp16_tflops", 1.0},
            {"bf16_tflops", 1.0}, {"copy_gbs", 10.0},   {"measured_at", "2026-01-01T00:00:00Z"}};
        if (content == "@missing")
            entry.erase("copy_gbs");
        else if (content == "@string")
            entry["fp16_tflops"] = "fast";
        else
            entry["bf16_tflops"] = -3.0;
        content = QByteArray::fromStdString(
            Json{{"format", "mixlab-ceilings/1"}, {"devices", {{key, entry}}}}.dump());
    }
    write_text(path, content);

    QVERIFY(!cached_ceilings(backend->info(), path.toStdString()));
    CeilingsRequest req;
    req.sizes = small_sizes();
    const Ceilings c = ceilings_for(*backend, path.toStdString(), req);
    QVERIFY(!c.from_cache);
    QVERIFY(c.cache_error.empty());
    QVERIFY(c.fp32_tflops > 0 && c.bf16_tflops > 0 && c.copy_gbs > 0);
    // Rewritten as a valid cache that the next call reads.
    QVERIFY(ceilings_for(*backend, path.toStdString(), req).from_cache);
}

void TestCeilings::unwritableCacheIsReported()
{
    QTemporaryDir dir;
    // A folder where the file should be: nothing can be written there, nothing thrown.
    const QString path = dir.filePath("ceilings.json");
    QVERIFY(QDir(dir.path()).mkdir("ceilings.json"));
    auto backend = make_backend(DeviceChoice::CPU);
    CeilingsRequest req;
    req.sizes = small_sizes();
    Ceilings c;
    try {
        c = ceilings_for(*backend, path.toStdString(), req);
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
    QVERIFY(c.fp32_tflops > 0);
    QVERIFY(!c.from_cache);
    QVERIFY2(c.cache_error.find("ceilings.json") != std::string::npos, c.cache_error.c_str());
}

void TestCeilings::defaultCachePath()
{
    const QByteArray oldXdg = qgetenv("XDG_CACHE_HOME"), oldHome = qgetenv("HOME");
    const bool hadXdg = qEnvironmentVariableIsSet("XDG_CACHE_HOME");
    qputenv("XDG_CACHE_HOME", "/tmp/xdg-cache-test");
    QCOMPARE(default_ceilings_cache_path(),
             std::string("/tmp/xdg-cache-test/mixlab/ceilings.json"));
    qputenv("HOME", "/home/someone");
    qputenv("XDG_CACHE_HOME", "relative/cache"); // the XDG spec says to ignore it
    QCOMPARE(default_ceilings_cache_path(),
             std::string("/home/someone/.cache/mixlab/ceilings.json"));
    qunsetenv("XDG_CACHE_HOME");
    QCOMPARE(default_ceilings_cache_path(),
             std::string("/home/someone/.cache/mixlab/ceilings.json"));
    qputenv("HOME", oldHome);
    if (hadXdg) qputenv("XDG_CACHE_HOME", oldXdg);
}

void TestCeilings::rooflineFloor_data()
{
    QTest::addColumn<double>("flops");
    QTest::addColumn<double>("bytes");
    QTest::addColumn<double>("tflops");
    QTest::addColumn<double>("gbs");
    QTest::addColumn<double>("expected_ms");
    // 2*8192^3 flops at 800 TFLOP/s: 1.374 ms; its 3 x 128 MiB of bf16 at 4000 GB/s: 0.1 ms.
    QTest::newRow("compute bound") << 2.0 * 8192.0 * 8192.0 * 8192.0 << 3.0 * 134217728.0 << 800.0
                                   << 4000.0 << 2.0 * 8192.0 * 8192.0 * 8192.0 / 800e12 * 1e3;
    // An element-wise op on 1e8 floats: 1e8 flops, 8e8 bytes: 0.2 ms of memory, 0.0002 of math.
    QTest::newRow("memory bound") << 1e8 << 8e8 << 500.0 << 4000.0 << 0.2;
    QTest::newRow("the seed's dense layer on a 2060")
        << 2.0 * 32 * 3072 * 3000 << 2.0 * (32 * 3072 + 3072 * 3000 + 32 * 3000) << 13.0 << 336.0
        << 2.0 * (32 * 3072 + 3072 * 3000 + 32 * 3000) / 336e9 * 1e3;
    QTest::newRow("unknown compute ceiling") << 1e12 << 4e9 << 0.0 << 2000.0 << 2.0;
    QTest::newRow("unknown bandwidth") << 1e12 << 4e9 << 100.0 << 0.0 << 10.0;
    QTest::newRow("both unknown") << 1e12 << 4e9 << 0.0 << 0.0 << 0.0;
    QTest::newRow("no work") << 0.0 << 0.0 << 100.0 << 1000.0 << 0.0;
}

void TestCeilings::rooflineFloor()
{
    QFETCH(double, flops);
    QFETCH(double, bytes);
    QFETCH(double, tflops);
    QFETCH(double, gbs);
    QFETCH(double, expected_ms);
    const double got = roofline_floor_ms(flops, bytes, tflops, gbs);
    // Plain double arithmetic: only the last bits may differ from the expected formula.
    const double tol = 1e-12 + 1e-9 * std::abs(expected_ms);
    QVERIFY2(std::abs(got - expected_ms) <= tol, qPrintable(QStringLiteral("got %1 ms, expected %2")
                                                                .arg(got, 0, 'g', 12)
                                                                .arg(expected_ms, 0, 'g', 12)));
}

void TestCeilings::rooflineRejectsNegativeWork()
{
    QVERIFY_THROWS_EXCEPTION(InputError, roofline_floor_ms(-1.0, 0.0, 1.0, 1.0));
    QVERIFY_THROWS_EXCEPTION(InputError, roofline_floor_ms(1.0, std::nan(""), 1.0, 1.0));
}

void TestCeilings::policyCeiling()
{
    Ceilings c;
    c.fp32_tflops = 51.5;
    c.tf32_tflops = 380.25;
    c.fp16_tflops = 780.5;
    c.bf16_tflops = 790.75;
    QCOMPARE(policy_tflops(c, Policy::FP32), 51.5);
    QCOMPARE(policy_tflops(c, Policy::TF32), 380.25);
    QCOMPARE(policy_tflops(c, Policy::MixedFP16), 780.5);
    QCOMPARE(policy_tflops(c, Policy::FP16), 780.5);
    QCOMPARE(policy_tflops(c, Policy::MixedBF16), 790.75);
    // mixed_fp8: the fp8 rate where measured (its floor must hold for its fp8 layers),
    // bf16's on a GPU without fp8 GEMMs.
    QCOMPARE(policy_tflops(c, Policy::MixedFP8), 790.75);
    Ceilings hopper = c;
    hopper.fp8_tflops = 1418.0;
    QCOMPARE(policy_tflops(hopper, Policy::MixedFP8), 1418.0);
}

void TestCeilings::capabilityFacts()
{
    auto value = [](const std::vector<CapabilityFact>& rows, const std::string& label) {
        for (const CapabilityFact& f : rows)
            if (f.label == label) return f.value;
        return std::string("<absent>");
    };
    DeviceInfo turing;
    turing.backend = BackendKind::Cuda;
    turing.name = "NVIDIA GeForce RTX 2060";
    turing.cc_major = 7;
    turing.cc_minor = 5;
    turing.memory_bytes = std::int64_t(6) << 30;
    turing.tensor_cores = true;
    auto rows = capability_facts(turing);
    QCOMPARE(value(rows, "compute capability"), std::string("7.5"));
    QCOMPARE(value(rows, "memory"), std::string("6.0 GiB"));
    QCOMPARE(value(rows, "fp16 tensor cores (7.0+)"), std::string("yes"));
    QCOMPARE(value(rows, "bf16 tensor cores (8.0+)"), std::string("no"));
    QCOMPARE(value(rows, "TF32 tensor cores (8.0+)"), std::string("no"));
    const std::string text = describe_capabilities(turing);
    QVERIFY2(text.find("mixed_bf16 is refused on this GPU (compute capability 7.5)") !=
                 std::string::npos,
             text.c_str());

    DeviceInfo hopper = turing;
    hopper.name = "NVIDIA H200";
    hopper.cc_major = 9;
    hopper.cc_minor = 0;
    hopper.bf16 = hopper.tf32 = true;
    rows = capability_facts(hopper);
    QCOMPARE(value(rows, "bf16 tensor cores (8.0+)"), std::string("yes"));
    QCOMPARE(value(rows, "TF32 tensor cores (8.0+)"), std::string("yes"));

    auto cpu = make_backend(DeviceChoice::CPU);
    rows = capability_facts(cpu->info());
    QCOMPARE(value(rows, "tensor cores"), std::string("no"));
    QCOMPARE(value(rows, "compute capability"), std::string("none (CPU backend)"));
    QVERIFY(describe_capabilities(cpu->info()).find("emulates") != std::string::npos);
}

void TestCeilings::cliCeilings()
{
    QTemporaryDir dir;
    const QString cache = dir.filePath("c.json");
    auto run = [&](const QStringList& extra) {
        QProcess p;
        p.start(QStringLiteral(MIXLAB_CLI_PATH),
                QStringList{"ceilings", "--device", "cpu", "--cache", cache} + extra);
        if (!p.waitForFinished(30000)) return std::make_pair(-1, QByteArray("timed out"));
        return std::make_pair(p.exitCode(), p.readAllStandardOutput());
    };
    const auto [rc1, out1] = run({"--json"});
    QCOMPARE(rc1, 0);
    const Json first = Json::parse(out1.toStdString());
    QCOMPARE(first["ceilings"]["from_cache"].get<bool>(), false);
    QVERIFY(first["ceilings"]["fp32_tflops"].get<double>() > 0);
    QCOMPARE(first["cache_path"].get<std::string>(), cache.toStdString());
    QVERIFY(first["device"].is_array() && !first["device"].empty());

    const auto [rc2, out2] = run({});
    QCOMPARE(rc2, 0);
    const QString text = QString::fromUtf8(out2);
    QVERIFY2(
        text.contains("cached, measured " +
                      QString::fromStdString(first["ceilings"]["measured_at"].get<std::string>())),
        qPrintable(text));
    QVERIFY2(text.contains("fp32 GEMM"), qPrintable(text));
    QVERIFY2(text.contains("tensor cores: no"), qPrintable(text));

    const auto [rc3, out3] = run({"--json", "--refresh"});
    QCOMPARE(rc3, 0);
    QCOMPARE(Json::parse(out3.toStdString())["ceilings"]["from_cache"].get<bool>(), false);

    QProcess bad;
    bad.start(QStringLiteral(MIXLAB_CLI_PATH), {"ceilings", "--device", "tpu"});
    QVERIFY(bad.waitForFinished(30000));
    QCOMPARE(bad.exitCode(), 2);
}

QTEST_APPLESS_MAIN(TestCeilings)
#include "tst_ceilings.moc"
