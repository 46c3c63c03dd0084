// Tests for the `mixlab-run/1` format and the precision policies it names: parsing,
// the messages for bad fields and values, validation, writing and reading back.
#include "mixlab/error.h"
#include "mixlab/policy.h"
#include "mixlab/run_config.h"

#include <QtTest/QtTest>

#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "format_v1.h"

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>

using namespace mixlab;

Q_DECLARE_METATYPE(Policy)
Q_DECLARE_METATYPE(LossScaleMode)

namespace {

std::uint32_t fbits(float f) { return std::bit_cast<std::uint32_t>(f); }

// Every field, floats compared by their bits: equal exactly when nothing was lost.
QString differences(const RunConfig& a, const RunConfig& b)
{
    QStringList d;
    auto check = [&](bool same, const char* field) {
        if (!same) d << field;
    };
    check(a.dataset.name == b.dataset.name, "dataset.name");
    check(a.dataset.cifar100_coarse == b.dataset.cifar100_coarse, "dataset.cifar100_labels");
    check(a.dataset.synthetic_train == b.dataset.synthetic_train, "dataset.synthetic_train");
    check(a.dataset.synthetic_test == b.dataset.synthetic_test, "dataset.synthetic_test");
    check(a.dataset.crop_padding == b.dataset.crop_padding, "dataset.augment.crop_padding");
    check(a.dataset.horizontal_flip == b.dataset.horizontal_flip,
          "dataset.augment.horizontal_flip");
    check(a.policy == b.policy, "policy");
    check(a.loss_scale.mode == b.loss_scale.mode, "loss_scale.mode");
    check(fbits(a.loss_scale.init) == fbits(b.loss_scale.init), "loss_scale.init");
    check(fbits(a.loss_scale.growth_factor) == fbits(b.loss_scale.growth_factor),
          "loss_scale.growth_factor");
    check(fbits(a.loss_scale.backoff_factor) == fbits(b.loss_scale.backoff_factor),
          "loss_scale.backoff_factor");
    check(a.loss_scale.growth_interval == b.loss_scale.growth_interval,
          "loss_scale.growth_interval");
    check(a.batch_size == b.batch_size, "batch_size");
    check(a.epochs == b.epochs, "epochs");
    check(a.steps == b.steps, "steps");
    check(a.optimizer.type == b.optimizer.type, "optimizer.type");
    check(fbits(a.optimizer.lr) == fbits(b.optimizer.lr), "optimizer.lr");
    check(fbits(a.optimizer.momentum) == fbits(b.optimizer.momentum), "optimizer.momentum");
    check(a.optimizer.nesterov == b.optimizer.nesterov, "optimizer.nesterov");
    check(fbits(a.optimizer.weight_decay) == fbits(b.optimizer.weight_decay),
          "optimizer.weight_decay");
    check(fbits(a.optimizer.beta1) == fbits(b.optimizer.beta1), "optimizer.beta1");
    check(fbits(a.optimizer.beta2) == fbits(b.optimizer.beta2), "optimizer.beta2");
    check(fbits(a.optimizer.eps) == fbits(b.optimizer.eps), "optimizer.eps");
    check(fbits(a.optimizer.clip_norm) == fbits(b.optimizer.clip_norm), "optimizer.clip_norm");
    check(a.optimizer.master_weights == b.optimizer.master_weights, "optimizer.master_weights");
    check(a.seed == b.seed, "seed");
    check(a.device == b.device, "device");
    check(a.bptt == b.bptt, "bptt");
    check(a.lr_schedule.type == b.lr_schedule.type, "lr_schedule.type");
    check(fbits(a.lr_schedule.factor) == fbits(b.lr_schedule.factor), "lr_schedule.factor");
    check(a.dataset.synthetic_text_tokens == b.dataset.synthetic_text_tokens,
          "dataset.synthetic_text_tokens");
    check(a.dataset.synthetic_text_vocab == b.dataset.synthetic_text_vocab,
          "dataset.synthetic_text_vocab");
    return d.join(", ");
}

// A config with `body` after the format field.
QByteArray run(const char* body)
{
    return QByteArray(R"({"format": "mixlab-run/1", )") + body + "}";
}

const char* k_design_example = R"(
{"format": "mixlab-run/1", "dataset": {"name": "fashion-mnist"}, "policy": "mixed_fp16",
 "loss_scale": {"mode": "dynamic", "init": 65536, "growth_factor": 2, "backoff_factor": 0.5,
                "growth_interval": 2000},
 "batch_size": 256, "epochs": 5, "optimizer": {"type": "sgd", "lr": 0.01, "momentum": 0.9},
 "seed": 42, "device": "auto"})";

void write_file(const QString& path, const std::string& text)
{
    std::ofstream out(path.toStdString(), std::ios::binary);
    out << text;
}

} // namespace

class TestRunConfig : public QObject {
    Q_OBJECT

private slots:
    // ---- policies ---------------------------------------------------------------------
    void policy_names_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<Policy>("policy");
        QTest::addRow("fp32") << "fp32" << Policy::FP32;
        QTest::addRow("tf32") << "tf32" << Policy::TF32;
        QTest::addRow("mixed_fp16") << "mixed_fp16" << Policy::MixedFP16;
        QTest::addRow("mixed_bf16") << "mixed_bf16" << Policy::MixedBF16;
        QTest::addRow("fp16") << "fp16" << Policy::FP16;
        QTest::addRow("Keras float32") << "float32" << Policy::FP32;
        QTest::addRow("Keras mixed_float16") << "mixed_float16" << Policy::MixedFP16;
        QTest::addRow("Keras mixed_bfloat16") << "mixed_bfloat16" << Policy::MixedBF16;
        QTest::addRow("upper case") << "MIXED_FP16" << Policy::MixedFP16;
    }
    void policy_names()
    {
        QFETCH(QString, name);
        QFETCH(Policy, policy);
        QCOMPARE(parse_policy(name.toStdString()), policy);
    }

    void policy_round_trip()
    {
        int n = 0;
        for (Policy p : k_all_policies) {
            QCOMPARE(parse_policy(policy_name(p)), p);
            ++n;
        }
        QCOMPARE(n, 6);
        QCOMPARE(policy_name(Policy::MixedBF16), std::string_view("mixed_bf16"));
    }

    void unknown_policy()
    {
        for (const char* bad : {"mixed_float32", "", "fp8", "bfloat16x"}) {
            try {
                parse_policy(bad);
                QFAIL(bad);
            } catch (const InputError& e) {
                const QString msg = e.what();
                QVERIFY2(msg.contains(QString("\"%1\"").arg(bad)), qPrintable(msg));
                QVERIFY2(msg.contains("fp32, tf32, mixed_fp16, mixed_bf16, fp16"), qPrintable(msg));
                QVERIFY2(msg.contains("mixed_float16"), qPrintable(msg));
            }
        }
    }

    // README's policy table.
    void policy_traits_table_data()
    {
        QTest::addColumn<Policy>("policy");
        QTest::addColumn<int>("compute");
        QTest::addColumn<bool>("master");
        QTest::addColumn<int>("min_cc");
        QTest::addColumn<int>("math");
        QTest::addColumn<bool>("scaling");
        QTest::addRow("fp32") << Policy::FP32 << int(DType::F32) << false << 0
                              << int(MathMode::Pedantic) << false;
        QTest::addRow("tf32") << Policy::TF32 << int(DType::F32) << false << 80
                              << int(MathMode::TF32) << false;
        QTest::addRow("mixed_fp16")
            << Policy::MixedFP16 << int(DType::F16) << true << 0 << int(MathMode::Reduced) << true;
        QTest::addRow("mixed_bf16") << Policy::MixedBF16 << int(DType::BF16) << true << 80
                                    << int(MathMode::Reduced) << false;
        QTest::addRow("fp16") << Policy::FP16 << int(DType::F16) << false << 0
                              << int(MathMode::Reduced) << false;
        QTest::addRow("mixed_fp8") << Policy::MixedFP8 << int(DType::BF16) << true << 89
                                   << int(MathMode::Reduced) << false;
    }
    void policy_traits_table()
    {
        QFETCH(Policy, policy);
        QFETCH(int, compute);
        QFETCH(bool, master);
        QFETCH(int, min_cc);
        QFETCH(int, math);
        QFETCH(bool, scaling);
        const PolicyTraits t = policy_traits(policy);
        QCOMPARE(int(t.compute), compute);
        QCOMPARE(t.master_weights, master);
        QCOMPARE(t.min_cc, min_cc);
        QCOMPARE(int(t.math), math);
        QCOMPARE(t.default_loss_scaling, scaling);
    }

    // ---- names ------------------------------------------------------------------------
    void enum_names()
    {
        QCOMPARE(loss_scale_mode_name(LossScaleMode::Default), std::string_view("default"));
        QCOMPARE(loss_scale_mode_name(LossScaleMode::Dynamic), std::string_view("dynamic"));
        QCOMPARE(loss_scale_mode_name(LossScaleMode::Static), std::string_view("static"));
        QCOMPARE(loss_scale_mode_name(LossScaleMode::None), std::string_view("none"));
        QCOMPARE(optimizer_name(OptimizerType::SGD), std::string_view("sgd"));
        QCOMPARE(optimizer_name(OptimizerType::Adam), std::string_view("adam"));
        QCOMPARE(optimizer_name(OptimizerType::AdamW), std::string_view("adamw"));
        for (DeviceChoice d : {DeviceChoice::Auto, DeviceChoice::CPU, DeviceChoice::CUDA})
            QCOMPARE(parse_device_choice(device_choice_name(d)), d);
        QCOMPARE(device_choice_name(DeviceChoice::CUDA), std::string_view("cuda"));
        QCOMPARE(parse_device_choice("CPU"), DeviceChoice::CPU);
        try {
            parse_device_choice("gpu");
            QFAIL("accepted gpu");
        } catch (const InputError& e) {
            QVERIFY2(QString(e.what()).contains(
                         "unknown device \"gpu\"; valid devices: auto, cpu, cuda"),
                     e.what());
        }
    }

    // ---- parsing ----------------------------------------------------------------------
    void design_example()
    {
        const RunConfig c = parse_run_config(k_design_example);
        QCOMPARE(c.dataset.name, std::string("fashion-mnist"));
        QCOMPARE(c.policy, Policy::MixedFP16);
        QCOMPARE(c.loss_scale.mode, LossScaleMode::Dynamic);
        QCOMPARE(c.loss_scale.init, 65536.0f);
        QCOMPARE(c.loss_scale.growth_factor, 2.0f);
        QCOMPARE(c.loss_scale.backoff_factor, 0.5f);
        QCOMPARE(c.loss_scale.growth_interval, 2000);
        QCOMPARE(c.batch_size, 256);
        QCOMPARE(c.epochs, 5);
        QCOMPARE(c.steps, std::int64_t(0));
        QCOMPARE(c.optimizer.type, OptimizerType::SGD);
        QCOMPARE(c.optimizer.lr, 0.01f);
        QCOMPARE(c.optimizer.momentum, 0.9f);
        QCOMPARE(c.seed, std::uint64_t(42));
        QCOMPARE(c.device, DeviceChoice::Auto);
    }

    void minimal_config_takes_defaults()
    {
        const RunConfig c = parse_run_config(R"({"format": "mixlab-run/1"})");
        QCOMPARE(differences(c, RunConfig{}), QString());
        QCOMPARE(c.loss_scale.mode, LossScaleMode::Default);
    }

    void every_field()
    {
        const RunConfig c = parse_run_config(run(R"(
            "dataset": {"name": "/data/cifar-100", "cifar100_labels": "coarse",
                        "synthetic_train": 500, "synthetic_test": 50},
            "policy": "mixed_bfloat16",
            "loss_scale": {"mode": "static", "init": 128, "growth_factor": 4, "backoff_factor": 0.25,
                           "growth_interval": 10},
            "batch_size": 1048576, "epochs": 0, "steps": 100,
            "optimizer": {"type": "adamw", "lr": 3e-4, "momentum": 0, "nesterov": true,
                          "weight_decay": 0.01, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6,
                          "clip_norm": 0.25, "master_weights": "bf16_split"},
            "seed": 18446744073709551615, "device": "cuda")")
                                                 .toStdString());
        QCOMPARE(c.dataset.name, std::string("/data/cifar-100"));
        QVERIFY(c.dataset.cifar100_coarse);
        QCOMPARE(c.dataset.synthetic_train, std::int64_t(500));
        QCOMPARE(c.dataset.synthetic_test, std::int64_t(50));
        QCOMPARE(c.policy, Policy::MixedBF16);
        QCOMPARE(c.optimizer.master_weights, MasterWeights::Bf16Split);
        QCOMPARE(c.loss_scale.mode, LossScaleMode::Static);
        QCOMPARE(c.loss_scale.init, 128.0f);
        QCOMPARE(c.loss_scale.growth_factor, 4.0f);
        QCOMPARE(c.loss_scale.backoff_factor, 0.25f);
        QCOMPARE(c.loss_scale.growth_interval, 10);
        QCOMPARE(c.batch_size, 1048576);
        QCOMPARE(c.epochs, 0);
        QCOMPARE(c.steps, std::int64_t(100));
        QCOMPARE(c.optimizer.type, OptimizerType::AdamW);
        QCOMPARE(c.optimizer.lr, 3e-4f);
        QCOMPARE(c.optimizer.momentum, 0.0f);
        QVERIFY(c.optimizer.nesterov);
        QCOMPARE(c.optimizer.weight_decay, 0.01f);
        QCOMPARE(c.optimizer.beta1, 0.8f);
        QCOMPARE(c.optimizer.beta2, 0.95f);
        QCOMPARE(c.optimizer.eps, 1e-6f);
        QCOMPARE(c.optimizer.clip_norm, 0.25f);
        QCOMPARE(c.seed, std::numeric_limits<std::uint64_t>::max());
        QCOMPARE(c.device, DeviceChoice::CUDA);

        QCOMPARE(parse_run_config(run(R"("dataset": "mnist")").toStdString()).dataset.name,
                 std::string("mnist"));
        QCOMPARE(parse_run_config(run(R"("dataset": {"cifar100_labels": "fine"})").toStdString())
                     .dataset.cifar100_coarse,
                 false);
        QCOMPARE(parse_run_config(run(R"("loss_scale": {"mode": "none"})").toStdString())
                     .loss_scale.mode,
                 LossScaleMode::None);
        QCOMPARE(
            parse_run_config(run(R"("optimizer": {"type": "adam"})").toStdString()).optimizer.type,
            OptimizerType::Adam);
    }

    // A language model's settings, and the example's defaults the front ends start from.
    void language_model_fields()
    {
        const RunConfig c = parse_run_config(
            run(R"("dataset": {"name": "synthetic-text", "synthetic_text_tokens": 5000,
                               "synthetic_text_vocab": 500},
                   "bptt": 70, "lr_schedule": {"type": "plateau", "factor": 0.5})")
                .toStdString());
        QCOMPARE(c.bptt, 70);
        QCOMPARE(c.lr_schedule.type, LrSchedule::Plateau);
        QCOMPARE(c.lr_schedule.factor, 0.5f);
        QCOMPARE(c.dataset.synthetic_text_tokens, std::int64_t(5000));
        QCOMPARE(c.dataset.synthetic_text_vocab, 500);
        QCOMPARE(differences(parse_run_config(run_config_to_json(c)), c), QString());

        // A classifier's config does not mention them (its files read as before).
        const std::string plain = run_config_to_json(RunConfig{});
        QVERIFY(plain.find("bptt") == std::string::npos);
        QVERIFY(plain.find("lr_schedule") == std::string::npos);
        QVERIFY(plain.find("synthetic_text") == std::string::npos);

        const RunConfig lm = with_language_model_defaults(RunConfig{});
        QCOMPARE(lm.batch_size, 20);
        QCOMPARE(lm.bptt, 35);
        QCOMPARE(lm.optimizer.type, OptimizerType::SGD);
        QCOMPARE(lm.optimizer.lr, 20.0f);
        QCOMPARE(lm.optimizer.momentum, 0.0f);
        QCOMPARE(lm.optimizer.clip_norm, 0.25f);
        QCOMPARE(lm.lr_schedule.type, LrSchedule::Plateau);
        QCOMPARE(lm.lr_schedule.factor, 0.25f);
        validate_run_config(lm);
    }

    void invalid_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QStringList>("fragments");
        // The document and its format.
        QTest::addRow("malformed JSON")
            << QByteArray("{\"format\": \"mixlab-run/1\",\n\n \"batch_size\": }")
            << QStringList{"run config is not valid JSON", "line 3, column"};
        QTest::addRow("not an object")
            << QByteArray("42") << QStringList{"must be a JSON object", "got 42"};
        QTest::addRow("missing format") << QByteArray(R"({"batch_size": 32})")
                                        << QStringList{"no \"format\"", "\"mixlab-run/1\""};
        QTest::addRow("newer format")
            << QByteArray(R"({"format": "mixlab-run/3"})")
            << QStringList{"\"mixlab-run/3\"", "newer MixLab", "reads \"mixlab-run/1\""};
        QTest::addRow("model spec given as a run") << QByteArray(R"({"format": "mixlab-model/1"})")
                                                   << QStringList{"model spec", "not a run config"};
        QTest::addRow("foreign format")
            << QByteArray(R"({"format": "yaml"})")
            << QStringList{"\"format\" must be \"mixlab-run/1\", got \"yaml\""};
        // Unknown fields at each level.
        QTest::addRow("top-level typo")
            << run(R"("batchsize": 32)")
            << QStringList{"unknown field \"batchsize\" in the run config",
                           "did you mean \"batch_size\"?"};
        QTest::addRow("optimizer field")
            << run(R"("optimizer": {"learning_rate": 0.1})")
            << QStringList{"unknown field \"learning_rate\" in \"optimizer\"", "lr, momentum"};
        QTest::addRow("loss_scale field")
            << run(R"("loss_scale": {"mode": "dynamic", "init_scale": 8})")
            << QStringList{"unknown field \"init_scale\" in \"loss_scale\""};
        QTest::addRow("dataset field")
            << run(R"("dataset": {"nmae": "mnist"})")
            << QStringList{"unknown field \"nmae\" in \"dataset\"", "did you mean \"name\"?"};
        // Types and names.
        QTest::addRow("unknown policy")
            << run(R"("policy": "mixed_float32")")
            << QStringList{"\"policy\": unknown precision policy \"mixed_float32\"",
                           "fp32, tf32, mixed_fp16, mixed_bf16, fp16"};
        QTest::addRow("policy not a string")
            << run(R"("policy": 16)") << QStringList{"\"policy\" must be a policy name", "got 16"};
        // mixed_fp8's delayed scaling (tst_fp8 has the rest).
        QTest::addRow("fp8 history 0")
            << run(R"("fp8": {"amax_history": 0})")
            << QStringList{"\"fp8.amax_history\" must be between 1 and 1024 steps, got 0"};
        QTest::addRow("fp8 margin 12")
            << run(R"("fp8": {"margin": 12})")
            << QStringList{"\"fp8.margin\" must be an integer between -8 and 8", "got 12"};
        QTest::addRow("fp8 field") << run(R"("fp8": {"amax_histroy": 8})")
                                   << QStringList{"unknown field \"amax_histroy\" in \"fp8\"",
                                                  "did you mean \"amax_history\"?"};
        QTest::addRow("unknown device")
            << run(R"("device": "gpu")")
            << QStringList{"\"device\": unknown device \"gpu\"; valid devices: auto, cpu, cuda"};
        QTest::addRow("unknown loss-scale mode")
            << run(R"("loss_scale": {"mode": "auto"})")
            << QStringList{"\"loss_scale.mode\" must be \"dynamic\", \"static\" or \"none\"",
                           "got \"auto\""};
        QTest::addRow("loss_scale not an object")
            << run(R"("loss_scale": 1024)")
            << QStringList{"\"loss_scale\" must be an object", "got 1024"};
        QTest::addRow("unknown optimizer")
            << run(R"("optimizer": {"type": "rmsprop"})")
            << QStringList{
                   "\"optimizer.type\" must be \"sgd\", \"adam\" or \"adamw\", got \"rmsprop\""};
        QTest::addRow("dataset not an object")
            << run(R"("dataset": 3)") << QStringList{"\"dataset\" must be an object"};
        QTest::addRow("cifar100 labels")
            << run(R"("dataset": {"cifar100_labels": "medium"})")
            << QStringList{"\"dataset.cifar100_labels\" must be \"fine\"", "\"coarse\"",
                           "got \"medium\""};
        QTest::addRow("batch as a string")
            << run(R"("batch_size": "256")")
            << QStringList{"\"batch_size\" must be an integer, got \"256\""};
        QTest::addRow("fractional batch")
            << run(R"("batch_size": 32.5)")
            << QStringList{"\"batch_size\" must be an integer, got 32.5"};
        QTest::addRow("batch beyond int")
            << run(R"("batch_size": 1000000000000)")
            << QStringList{"\"batch_size\" must be an integer between"};
        QTest::addRow("negative seed")
            << run(R"("seed": -1)")
            << QStringList{"\"seed\" must be a non-negative integer, got -1"};
        QTest::addRow("lr as text")
            << run(R"("optimizer": {"lr": "fast"})")
            << QStringList{"\"optimizer.lr\" must be a number, got \"fast\""};
        QTest::addRow("nesterov as text")
            << run(R"("optimizer": {"nesterov": "yes"})")
            << QStringList{"\"optimizer.nesterov\" must be true or false"};
        QTest::addRow("fractional synthetic size")
            << run(R"("dataset": {"synthetic_train": 1.5})")
            << QStringList{"\"dataset.synthetic_train\" must be an integer"};
        // Values no run can use (parse validates).
        QTest::addRow("batch 0") << run(R"("batch_size": 0)")
                                 << QStringList{
                                        "\"batch_size\" must be between 1 and 1048576, got 0"};
        QTest::addRow("batch 2^20+1")
            << run(R"("batch_size": 1048577)")
            << QStringList{"\"batch_size\" must be between 1 and 1048576, got 1048577"};
        QTest::addRow("epochs 0") << run(R"("epochs": 0)")
                                  << QStringList{
                                         "\"epochs\" must be at least 1 (or set \"steps\"), got 0"};
        QTest::addRow("negative steps")
            << run(R"("steps": -1)") << QStringList{"\"steps\" must be 0", "got -1"};
        QTest::addRow("lr 0") << run(R"("optimizer": {"lr": 0})")
                              << QStringList{
                                     "\"optimizer.lr\" must be a positive finite number, got 0"};
        QTest::addRow("lr overflows float")
            << run(R"("optimizer": {"lr": 1e39})")
            << QStringList{"\"optimizer.lr\" must be a positive finite number, got inf"};
        QTest::addRow("momentum 1")
            << run(R"("optimizer": {"momentum": 1})")
            << QStringList{"\"optimizer.momentum\" must be in [0, 1), got 1"};
        QTest::addRow("negative weight decay")
            << run(R"("optimizer": {"weight_decay": -0.1})")
            << QStringList{"\"optimizer.weight_decay\" must be a finite number >= 0, got -0.1"};
        QTest::addRow("beta1 1") << run(R"("optimizer": {"beta1": 1})")
                                 << QStringList{"\"optimizer.beta1\" must be in [0, 1), got 1"};
        QTest::addRow("negative beta2")
            << run(R"("optimizer": {"beta2": -0.5})")
            << QStringList{"\"optimizer.beta2\" must be in [0, 1), got -0.5"};
        QTest::addRow("negative clip_norm")
            << run(R"("optimizer": {"clip_norm": -0.25})")
            << QStringList{"\"optimizer.clip_norm\" must be a finite number >= 0 (0: no "
                           "clipping), got -0.25"};
        QTest::addRow("clip_norm overflows float")
            << run(R"("optimizer": {"clip_norm": 1e39})")
            << QStringList{"\"optimizer.clip_norm\" must be a finite number", "got inf"};
        QTest::addRow("clip_norm as text") << run(R"("optimizer": {"clip_norm": "0.25"})")
                                           << QStringList{"\"optimizer.clip_norm\""};
        QTest::addRow("split masters under mixed_fp16")
            << run(R"("policy": "mixed_fp16", "optimizer": {"master_weights": "bf16_split"})")
            << QStringList{"\"optimizer.master_weights\": \"bf16_split\"",
                           "applies to the mixed_bf16 policy only", "policy \"mixed_fp16\""};
        QTest::addRow("split masters under fp32")
            << run(R"("optimizer": {"master_weights": "bf16_split"})")
            << QStringList{"\"optimizer.master_weights\"", "policy \"fp32\""};
        QTest::addRow("master_weights typo")
            << run(R"("policy": "mixed_bf16", "optimizer": {"master_weights": "bf16"})")
            << QStringList{"master_weights", "\"fp32\" or \"bf16_split\""};
        QTest::addRow("eps 0") << run(R"("optimizer": {"eps": 0})")
                               << QStringList{
                                      "\"optimizer.eps\" must be a positive finite number, got 0"};
        QTest::addRow("scale 0")
            << run(R"("loss_scale": {"init": 0})")
            << QStringList{"\"loss_scale.init\" must be a positive finite number, got 0"};
        QTest::addRow("growth 1")
            << run(R"("loss_scale": {"growth_factor": 1})")
            << QStringList{"\"loss_scale.growth_factor\" must be a finite number > 1, got 1"};
        QTest::addRow("backoff 1")
            << run(R"("loss_scale": {"backoff_factor": 1})")
            << QStringList{"\"loss_scale.backoff_factor\" must be in (0, 1), got 1"};
        QTest::addRow("backoff 0")
            << run(R"("loss_scale": {"backoff_factor": 0})")
            << QStringList{"\"loss_scale.backoff_factor\" must be in (0, 1), got 0"};
        QTest::addRow("interval 0")
            << run(R"("loss_scale": {"growth_interval": 0})")
            << QStringList{"\"loss_scale.growth_interval\" must be at least 1, got 0"};
        QTest::addRow("no synthetic test images")
            << run(R"("dataset": {"synthetic_test": 0})")
            << QStringList{"\"dataset.synthetic_test\" must be between 1 and"};
        // Augmentation.
        QTest::addRow("negative crop padding")
            << run(R"("dataset": {"augment": {"crop_padding": -1}})")
            << QStringList{"dataset.augment.", "crop_padding", "0 (off) to 64"};
        QTest::addRow("crop padding too large")
            << run(R"("dataset": {"augment": {"crop_padding": 65}})")
            << QStringList{"dataset.augment.", "crop_padding", "0 (off) to 64"};
        QTest::addRow("augment typo") << run(R"("dataset": {"augment": {"flip": true}})")
                                      << QStringList{"unknown field \"flip\"", "horizontal_flip"};
        QTest::addRow("augment not an object")
            << run(R"("dataset": {"augment": true})") << QStringList{"augment", "object"};
        // Language models.
        QTest::addRow("bptt 0") << run(R"("bptt": 0)")
                                << QStringList{"\"bptt\" must be between 1 and 4096", "got 0"};
        QTest::addRow("schedule typo")
            << run(R"("lr_schedule": {"type": "step"})")
            << QStringList{"lr_schedule.", "\"constant\" or \"plateau\""};
        QTest::addRow("schedule factor 1")
            << run(R"("lr_schedule": {"type": "plateau", "factor": 1})")
            << QStringList{"\"lr_schedule.factor\" must be in (0, 1), got 1"};
    }
    void invalid()
    {
        QFETCH(QByteArray, json);
        QFETCH(QStringList, fragments);
        try {
            parse_run_config(json.toStdString());
            QFAIL("parsed without an error");
        } catch (const InputError& e) {
            const QString msg = QString::fromUtf8(e.what());
            for (const QString& f : fragments)
                QVERIFY2(msg.contains(f), qPrintable("message: " + msg + "\nmissing: " + f));
            QVERIFY2(!msg.contains("json.exception"), qPrintable(msg));
        }
    }

    // Configs built in code (the GUI) get the same checks, including NaN and infinity,
    // which JSON cannot spell.
    void validate_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<double>("value");
        QTest::addColumn<QString>("fragment"); // empty: valid
        const double nan = std::nan(""), inf = HUGE_VAL;
        QTest::addRow("lr nan") << "lr" << nan
                                << "\"optimizer.lr\" must be a positive finite number, got nan";
        QTest::addRow("lr inf") << "lr" << inf << "got inf";
        QTest::addRow("lr tiny") << "lr" << 1e-30 << "";
        QTest::addRow("momentum nan")
            << "momentum" << nan << "\"optimizer.momentum\" must be in [0, 1)";
        QTest::addRow("momentum 0") << "momentum" << 0.0 << "";
        QTest::addRow("momentum 0.999") << "momentum" << 0.999 << "";
        QTest::addRow("weight decay inf") << "weight_decay" << inf << "\"optimizer.weight_decay\"";
        QTest::addRow("weight decay nan") << "weight_decay" << nan << "\"optimizer.weight_decay\"";
        QTest::addRow("beta1 nan") << "beta1" << nan << "\"optimizer.beta1\"";
        QTest::addRow("beta2 0") << "beta2" << 0.0 << "";
        QTest::addRow("eps inf") << "eps" << inf << "\"optimizer.eps\"";
        QTest::addRow("clip nan") << "clip_norm" << nan << "\"optimizer.clip_norm\"";
        QTest::addRow("clip inf") << "clip_norm" << inf << "\"optimizer.clip_norm\"";
        QTest::addRow("clip negative") << "clip_norm" << -1.0 << "\"optimizer.clip_norm\"";
        QTest::addRow("clip 0 (off)") << "clip_norm" << 0.0 << "";
        QTest::addRow("clip 0.25") << "clip_norm" << 0.25 << "";
        QTest::addRow("eps negative") << "eps" << -1e-8 << "\"optimizer.eps\"";
        QTest::addRow("scale nan") << "init" << nan << "\"loss_scale.init\"";
        QTest::addRow("scale inf") << "init" << inf << "\"loss_scale.init\"";
        QTest::addRow("scale 1") << "init" << 1.0 << "";
        QTest::addRow("growth inf") << "growth_factor" << inf << "\"loss_scale.growth_factor\"";
        QTest::addRow("growth 0.5") << "growth_factor" << 0.5 << "\"loss_scale.growth_factor\"";
        QTest::addRow("backoff nan") << "backoff_factor" << nan << "\"loss_scale.backoff_factor\"";
        QTest::addRow("backoff negative")
            << "backoff_factor" << -0.5 << "\"loss_scale.backoff_factor\"";
        QTest::addRow("interval negative")
            << "growth_interval" << -3.0 << "\"loss_scale.growth_interval\"";
        QTest::addRow("batch negative")
            << "batch_size" << -1.0 << "\"batch_size\" must be between 1 and 1048576, got -1";
        QTest::addRow("batch 1") << "batch_size" << 1.0 << "";
        QTest::addRow("epochs 0 with steps") << "epochs0_steps" << 5.0 << "";
        QTest::addRow("epochs 0 without steps")
            << "epochs0_steps" << 0.0 << "\"epochs\" must be at least 1";
        QTest::addRow("steps negative") << "steps" << -5.0 << "\"steps\" must be 0";
        QTest::addRow("synthetic train huge")
            << "synthetic_train" << 1e12
            << "\"dataset.synthetic_train\" must be between 1 and 10000000";
        QTest::addRow("crop padding 4") << "crop_padding" << 4.0 << "";
        QTest::addRow("crop padding 64") << "crop_padding" << 64.0 << "";
        QTest::addRow("crop padding 65")
            << "crop_padding" << 65.0
            << "\"dataset.augment.crop_padding\" must be between 0 (off) and 64 pixels, got 65";
        QTest::addRow("crop padding negative") << "crop_padding" << -4.0 << "got -4";
    }
    void validate()
    {
        QFETCH(QString, field);
        QFETCH(double, value);
        QFETCH(QString, fragment);
        RunConfig c;
        validate_run_config(c); // the defaults are valid
        const float f = float(value);
        if (field == "lr")
            c.optimizer.lr = f;
        else if (field == "momentum")
            c.optimizer.momentum = f;
        else if (field == "weight_decay")
            c.optimizer.weight_decay = f;
        else if (field == "beta1")
            c.optimizer.beta1 = f;
        else if (field == "beta2")
            c.optimizer.beta2 = f;
        else if (field == "eps")
            c.optimizer.eps = f;
        else if (field == "clip_norm")
            c.optimizer.clip_norm = f;
        else if (field == "init")
            c.loss_scale.init = f;
        else if (field == "growth_factor")
            c.loss_scale.growth_factor = f;
        else if (field == "backoff_factor")
            c.loss_scale.backoff_factor = f;
        else if (field == "growth_interval")
            c.loss_scale.growth_interval = int(value);
        else if (field == "batch_size")
            c.batch_size = int(value);
        else if (field == "steps")
            c.steps = std::int64_t(value);
        else if (field == "synthetic_train")
            c.dataset.synthetic_train = std::int64_t(value);
        else if (field == "crop_padding")
            c.dataset.crop_padding = int(value);
        else if (field == "epochs0_steps") {
            c.epochs = 0;
            c.steps = std::int64_t(value);
        } else
            QFAIL(qPrintable("unknown field in the test table: " + field));
        try {
            validate_run_config(c);
            QVERIFY2(fragment.isEmpty(), qPrintable("accepted; expected: " + fragment));
        } catch (const InputError& e) {
            QVERIFY2(!fragment.isEmpty(), e.what());
            QVERIFY2(QString(e.what()).contains(fragment),
                     qPrintable(QString(e.what()) + "\nmissing: " + fragment));
        }
    }

    void effective_mode_data()
    {
        QTest::addColumn<Policy>("policy");
        QTest::addColumn<LossScaleMode>("mode");
        QTest::addColumn<LossScaleMode>("effective");
        QTest::addRow("mixed_fp16 default")
            << Policy::MixedFP16 << LossScaleMode::Default << LossScaleMode::Dynamic;
        QTest::addRow("fp32 default")
            << Policy::FP32 << LossScaleMode::Default << LossScaleMode::None;
        QTest::addRow("tf32 default")
            << Policy::TF32 << LossScaleMode::Default << LossScaleMode::None;
        QTest::addRow("mixed_bf16 default")
            << Policy::MixedBF16 << LossScaleMode::Default << LossScaleMode::None;
        QTest::addRow("fp16 default")
            << Policy::FP16 << LossScaleMode::Default << LossScaleMode::None;
        QTest::addRow("fp16 asks for dynamic")
            << Policy::FP16 << LossScaleMode::Dynamic << LossScaleMode::Dynamic;
        QTest::addRow("mixed_fp16 turns it off")
            << Policy::MixedFP16 << LossScaleMode::None << LossScaleMode::None;
        QTest::addRow("mixed_fp16 static")
            << Policy::MixedFP16 << LossScaleMode::Static << LossScaleMode::Static;
        QTest::addRow("mixed_bf16 static")
            << Policy::MixedBF16 << LossScaleMode::Static << LossScaleMode::Static;
    }
    void effective_mode()
    {
        QFETCH(Policy, policy);
        QFETCH(LossScaleMode, mode);
        QFETCH(LossScaleMode, effective);
        RunConfig c;
        c.policy = policy;
        c.loss_scale.mode = mode;
        QCOMPARE(effective_loss_scale_mode(c), effective);
    }

    // ---- writing ----------------------------------------------------------------------
    void design_example_round_trip()
    {
        const RunConfig c = parse_run_config(k_design_example);
        const std::string text = run_config_to_json(c);
        QCOMPARE(differences(parse_run_config(text), c), QString());
        // Written the way a person would: 0.01 not 0.009999999776, 65536 not 65536.0.
        QVERIFY2(text.find("\"lr\": 0.01,") != std::string::npos, text.c_str());
        QVERIFY2(text.find("\"init\": 65536,") != std::string::npos, text.c_str());
        QVERIFY2(text.find("\"mode\": \"dynamic\"") != std::string::npos, text.c_str());
        // The policy's default mode is left out, so the file keeps meaning "the default".
        RunConfig d = c;
        d.loss_scale.mode = LossScaleMode::Default;
        const std::string dtext = run_config_to_json(d);
        QVERIFY(dtext.find("\"mode\"") == std::string::npos);
        QCOMPARE(parse_run_config(dtext).loss_scale.mode, LossScaleMode::Default);
    }

    void random_round_trip()
    {
        std::mt19937_64 rng(7);
        auto uni = [&](double lo, double hi) {
            return std::uniform_real_distribution<double>(lo, hi)(rng);
        };
        auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
        const Policy policies[] = {Policy::FP32, Policy::TF32, Policy::MixedFP16, Policy::MixedBF16,
                                   Policy::FP16};
        const LossScaleMode modes[] = {LossScaleMode::Default, LossScaleMode::Dynamic,
                                       LossScaleMode::Static, LossScaleMode::None};
        const OptimizerType opts[] = {OptimizerType::SGD, OptimizerType::Adam,
                                      OptimizerType::AdamW};
        const DeviceChoice devices[] = {DeviceChoice::Auto, DeviceChoice::CPU, DeviceChoice::CUDA};
        const char* names[] = {"", "fashion-mnist", "synthetic", "/tmp/a \"quoted\" folder",
                               "C:\\data\\cifar"};
        for (int trial = 0; trial < 1000; ++trial) {
            RunConfig c;
            c.dataset.name = names[pick(5)];
            c.dataset.cifar100_coarse = pick(2);
            c.dataset.synthetic_train = 1 + pick(10000000);
            c.dataset.synthetic_test = 1 + pick(100000);
            c.dataset.crop_padding = pick(2) ? 0 : pick(65);
            c.dataset.horizontal_flip = pick(2);
            c.policy = policies[pick(5)];
            c.loss_scale.mode = modes[pick(4)];
            c.loss_scale.init = float(std::exp2(uni(-10, 30)));
            c.loss_scale.growth_factor = float(uni(1.001, 8));
            c.loss_scale.backoff_factor = float(uni(0.01, 0.99));
            c.loss_scale.growth_interval = 1 + pick(100000);
            c.batch_size = 1 + pick(1048576);
            c.epochs = 1 + pick(1000);
            c.steps = pick(2) ? 0 : 1 + pick(1000000);
            c.optimizer.type = opts[pick(3)];
            c.optimizer.lr = float(std::exp2(uni(-20, 2)));
            c.optimizer.momentum = float(uni(0, 0.999));
            c.optimizer.nesterov = pick(2);
            c.optimizer.weight_decay = pick(3) ? float(uni(0, 0.1)) : 0.0f;
            c.optimizer.beta1 = float(uni(0, 0.999));
            c.optimizer.beta2 = float(uni(0, 0.9999));
            c.optimizer.eps = float(std::exp2(uni(-40, -5)));
            c.optimizer.clip_norm = pick(2) ? float(uni(0.01, 10)) : 0.0f;
            c.seed = rng();
            c.device = devices[pick(3)];
            c.bptt = pick(2) ? 35 : 1 + pick(4096);
            c.lr_schedule.type = pick(2) ? LrSchedule::Constant : LrSchedule::Plateau;
            c.lr_schedule.factor = pick(2) ? 0.25f : float(uni(0.01, 0.99));
            c.dataset.synthetic_text_tokens = pick(2) ? 1000000 : 100 + pick(100000000);
            c.dataset.synthetic_text_vocab = pick(2) ? 10000 : 16 + pick(1000000 - 16);
            validate_run_config(c);
            const std::string text = run_config_to_json(c);
            const RunConfig back = parse_run_config(text);
            const QString diff = differences(back, c);
            if (!diff.isEmpty())
                QFAIL(qPrintable("lost " + diff + " in\n" + QString::fromStdString(text)));
            QCOMPARE(run_config_to_json(back), text);
        }
    }

    void load_errors()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        auto message_of = [](const QString& path) -> QString {
            try {
                load_run_config(path.toStdString());
            } catch (const InputError& e) {
                return QString::fromUtf8(e.what());
            }
            return QString();
        };
        const QString missing = dir.filePath("missing.json");
        QString msg = message_of(missing);
        QVERIFY2(msg.contains(missing) && msg.contains("does not exist"), qPrintable(msg));
        msg = message_of(dir.path());
        QVERIFY2(msg.contains(dir.path()) && msg.contains("is a directory"), qPrintable(msg));
        const QString empty = dir.filePath("empty.json");
        write_file(empty, "");
        msg = message_of(empty);
        QVERIFY2(msg.contains(empty) && msg.contains("is empty"), qPrintable(msg));
        const QString bad = dir.filePath("bad.json");
        write_file(bad, run(R"("batch_size": 0)").toStdString());
        msg = message_of(bad);
        QVERIFY2(msg.contains(bad) && msg.contains("\"batch_size\" must be between 1 and 1048576"),
                 qPrintable(msg));
        const QString good = dir.filePath("good.json");
        write_file(good, k_design_example);
        QCOMPARE(load_run_config(good.toStdString()).batch_size, 256);
    }

    // Gradient clipping is written only when on: a run without it writes the fields
    // MixLab 0.1.0 wrote, and one with it says so (the logs carry this config).
    void clip_norm_written_when_on()
    {
        RunConfig c;
        auto optimizer = [](const RunConfig& rc) {
            return nlohmann::json::parse(run_config_to_json(rc))["optimizer"];
        };
        QVERIFY(!optimizer(c).contains("clip_norm"));
        c.optimizer.clip_norm = 0.25f;
        QCOMPARE(optimizer(c)["clip_norm"].get<double>(), 0.25);
        QCOMPARE(parse_run_config(run_config_to_json(c)).optimizer.clip_norm, 0.25f);
    }

    // A run file MixLab 0.1.0 wrote (tests/data/format-v1/run.json) loads, and writes back
    // the same settings.
    void old_run_file_loads()
    {
        const RunConfig c = load_run_config(test::format_v1_path("run.json").toStdString());
        QCOMPARE(c.policy, Policy::FP32);
        QCOMPARE(c.batch_size, 32);
        QCOMPARE(c.steps, std::int64_t(10));
        QCOMPARE(c.dataset.synthetic_train, std::int64_t(256));
        QCOMPARE(c.device, DeviceChoice::CPU);
        const auto file = nlohmann::json::parse(test::format_v1_text("run.json"));
        QVERIFY(nlohmann::json::parse(run_config_to_json(c)) == file);
    }
};

QTEST_APPLESS_MAIN(TestRunConfig)
#include "tst_run_config.moc"
