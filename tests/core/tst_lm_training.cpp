// A word-level language model trained end to end on the CPU backend, through RunGroup as
// every front end trains it: it learns (test perplexity well under the corpus's unigram
// perplexity), the epochs carry validation and perplexities into the log, the plateau
// schedule lowers the rate, mixed_fp16 (emulated) ends close to fp32, the trained model
// writes text, and a model meeting the wrong kind of data is told so.
#include "mixlab/error.h"
#include "mixlab/graph.h"
#include "mixlab/model_spec.h"
#include "mixlab/run_group.h"
#include "mixlab/run_log.h"
#include "mixlab/step_profile.h"
#include "mixlab/text_corpus.h"

#include "one_omp_thread_main.h"

#include <QtTest>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace mixlab;

namespace {

// An embedding of 32, one LSTM layer of 32 and the decoder: small enough for a few
// seconds per epoch, large enough to learn an order-2 source.
ModelSpec tiny_lm(bool tied)
{
    return parse_model_spec(std::string(R"({"format": "mixlab-model/1", "name": "tiny-lm",
        "layers": [
          {"type": "embedding", "vocab": "dataset", "dim": 32},
          {"type": "lstm", "hidden": 32, "layers": 1},
          {"type": "dense", "units": "vocab")") +
                            (tied ? R"(, "tie_weights": true)" : "") + "}]}");
}

RunConfig lm_config(Policy policy, int epochs)
{
    RunConfig c = with_language_model_defaults(RunConfig{});
    c.dataset.name = "synthetic-text";
    c.dataset.synthetic_text_tokens = 20000;
    c.dataset.synthetic_text_vocab = 200;
    c.batch_size = 10;
    c.bptt = 10;
    c.epochs = epochs;
    c.policy = policy;
    c.device = DeviceChoice::CPU;
    c.seed = 5;
    return c;
}

struct Recorder : RunGroupObserver {
    std::optional<GroupFacts> facts;
    std::vector<std::string> samples;
    void on_prepared(const GroupFacts& f) override { facts = f; }
    void on_run_sampled(int, const std::string& text) override { samples.push_back(text); }
};

double unigram_test_perplexity(const RunConfig& c)
{
    SyntheticTextOptions o;
    o.train_tokens = c.dataset.synthetic_text_tokens;
    o.vocab = c.dataset.synthetic_text_vocab;
    o.seed = c.seed;
    const TextCorpus corpus = make_synthetic_text(o);
    return unigram_perplexity(corpus, corpus.test);
}

} // namespace

class TestLmTraining : public QObject {
    Q_OBJECT
private slots:
    void learnsBelowTheUnigramPerplexity();
    void plateauLowersTheRate();
    void mixedFp16EndsCloseToFp32();
    void sampleTextIsDeterministic();
    void wrongKindOfDataIsNamed();
    void corpusShorterThanABatch();
    void profileCountsEveryToken();
};

// Two epochs: the test perplexity falls well under what word frequencies alone give, and
// every epoch has its validation loss, perplexities and rate in the log.
void TestLmTraining::learnsBelowTheUnigramPerplexity()
{
    const RunConfig c = lm_config(Policy::FP32, 2);
    RunGroup group(tiny_lm(false), {c});
    RunLog log;
    log.add_run(c);
    Recorder rec;
    const GroupOutcome out = group.run(log, rec);
    QVERIFY(!out.setup_failure);
    QCOMPARE(out.runs.front().status, RunOutcome::Status::Finished);
    log.set_summary(0, out.runs.front().summary);
    QVERIFY(rec.facts && rec.facts->graph.input.sequence);
    QCOMPARE(rec.facts->graph.classes, 200);
    // The references the test perplexity reads against, in the facts and the log.
    QVERIFY(rec.facts->perplexity_references && rec.facts->perplexity_references->floor &&
            rec.facts->perplexity_references->trigram);
    log.set_perplexity_references(*rec.facts->perplexity_references);

    const RunSummary& s = out.runs.front().summary;
    QVERIFY(s.language_model);
    QVERIFY(s.final_test_loss && s.final_valid_loss);
    const double unigram = unigram_test_perplexity(c);
    const double ppl = perplexity(*s.final_test_loss);
    QVERIFY2(ppl < 0.8 * unigram,
             qPrintable(QString("test perplexity %1, unigram %2").arg(ppl).arg(unigram)));
    // 20000 tokens in 10 columns of 2000, windows of 10: 199 full windows per epoch.
    QCOMPARE(s.steps, std::int64_t(2 * 199));

    const std::vector<EpochMetrics>& epochs = log.epochs(0);
    QCOMPARE(int(epochs.size()), 2);
    for (const EpochMetrics& e : epochs) {
        QVERIFY(e.language_model);
        QVERIFY(e.valid_loss.has_value());
        QCOMPARE(e.lr, 20.0f);
    }
    QVERIFY(epochs[1].test_loss < epochs[0].test_loss);
    // The steps' rate counts tokens: 100 per step.
    const std::string json = log.to_json();
    for (const char* key : {"\"valid_perplexity\"", "\"test_perplexity\"", "\"test_loss\"",
                            "\"final_test_perplexity\"", "\"lr\""})
        QVERIFY2(json.find(key) != std::string::npos, key);
    // The log reads back with the language model's fields.
    const RunLog back = RunLog::parse(json);
    QVERIFY(back.epochs(0).front().language_model);
    QCOMPARE(back.epochs(0).front().valid_loss, epochs.front().valid_loss);
    QVERIFY(back.summary(0)->language_model);
    QCOMPARE(back.perplexity_references()->unigram, rec.facts->perplexity_references->unigram);
    QCOMPARE(*back.perplexity_references()->trigram, *rec.facts->perplexity_references->trigram);
    QCOMPARE(*back.perplexity_references()->floor, *rec.facts->perplexity_references->floor);
    QCOMPARE(back.to_json(), json);
}

// An update far below half an ulp of every weight changes nothing, so the validation loss
// of epoch 2 equals epoch 1's: no improvement, and the example's schedule divides the
// rate by 4, saying so.
void TestLmTraining::plateauLowersTheRate()
{
    RunConfig c = lm_config(Policy::FP32, 3);
    c.dataset.synthetic_text_tokens = 4000;
    c.optimizer.lr = 1e-30f;
    RunGroup group(tiny_lm(true), {c});
    RunLog log;
    log.add_run(c);
    Recorder rec;
    const GroupOutcome out = group.run(log, rec);
    QCOMPARE(out.runs.front().status, RunOutcome::Status::Finished);
    const auto& epochs = log.epochs(0);
    QCOMPARE(int(epochs.size()), 3);
    QCOMPARE(epochs[0].valid_loss, epochs[1].valid_loss);
    QCOMPARE(epochs[1].lr, 1e-30f);
    QCOMPARE(epochs[2].lr, 1e-30f * 0.25f);
    QCOMPARE(out.runs.front().summary.final_lr, 1e-30f * 0.25f * 0.25f);
    int announced = 0;
    for (const RunEvent& e : log.events(0))
        if (e.message.find("learning rate") != std::string::npos &&
            e.message.find("did not improve") != std::string::npos)
            ++announced;
    QCOMPARE(announced, 2);
}

// The same model, data and initial weights in lockstep: fp16 storage with fp32 master
// weights and loss scaling ends within 3% of fp32's perplexity.
void TestLmTraining::mixedFp16EndsCloseToFp32()
{
    RunGroup group(tiny_lm(true), {lm_config(Policy::FP32, 3), lm_config(Policy::MixedFP16, 3)});
    RunLog log(RunLog::Kind::Compare);
    Recorder rec;
    const GroupOutcome out = group.run(log, rec);
    QCOMPARE(out.runs[0].status, RunOutcome::Status::Finished);
    QCOMPARE(out.runs[1].status, RunOutcome::Status::Finished);
    const double fp32 = perplexity(*out.runs[0].summary.final_test_loss);
    const double fp16 = perplexity(*out.runs[1].summary.final_test_loss);
    QVERIFY2(std::abs(fp16 / fp32 - 1.0) < 0.03,
             qPrintable(QString("fp32 %1, mixed_fp16 %2").arg(fp32).arg(fp16)));
}

// Words of the corpus, as many as asked, the same for the same seed.
void TestLmTraining::sampleTextIsDeterministic()
{
    RunConfig c = lm_config(Policy::FP32, 1);
    c.steps = 40;
    RunGroupOptions options;
    options.sample_words = 30;
    options.sample_temperature = 0.8f;
    std::string first;
    for (int attempt = 0; attempt < 2; ++attempt) {
        RunGroup group(tiny_lm(false), {c}, options);
        RunLog log;
        Recorder rec;
        const GroupOutcome out = group.run(log, rec);
        QCOMPARE(out.runs.front().status, RunOutcome::Status::Finished);
        QCOMPARE(int(rec.samples.size()), 1);
        QCOMPARE(rec.samples.front(), out.runs.front().sample);
        if (attempt == 0) {
            first = out.runs.front().sample;
            SyntheticTextOptions o;
            o.train_tokens = c.dataset.synthetic_text_tokens;
            o.vocab = c.dataset.synthetic_text_vocab;
            o.seed = c.seed;
            const TextCorpus corpus = make_synthetic_text(o);
            std::istringstream words(first);
            std::string w;
            int n = 0;
            while (words >> w) {
                QVERIFY2(corpus.index.count(w) == 1, w.c_str()); // a word of the corpus
                ++n;
            }
            QCOMPARE(n, 30); // synthetic-text has no <eos>
        } else {
            QCOMPARE(out.runs.front().sample, first);
        }
    }
}

// A language model on images and an image model on text fail in setup with a message
// that names both; a model that is not a language model cannot be sampled.
void TestLmTraining::wrongKindOfDataIsNamed()
{
    RunConfig images = lm_config(Policy::FP32, 1);
    images.dataset.name = "synthetic";
    {
        RunGroup group(tiny_lm(false), {images});
        RunLog log;
        Recorder rec;
        const GroupOutcome out = group.run(log, rec);
        QVERIFY(out.setup_failure);
        const std::string m = out.runs.front().failure;
        QVERIFY2(m.find("tiny-lm is a language model") != std::string::npos &&
                     m.find("synthetic is images") != std::string::npos,
                 m.c_str());
    }
    {
        const ModelSpec mlp = parse_model_spec(R"({"format": "mixlab-model/1", "name": "mlp",
            "layers": [{"type": "flatten"}, {"type": "dense", "units": "classes"}]})");
        RunGroup group(mlp, {lm_config(Policy::FP32, 1)});
        RunLog log;
        Recorder rec;
        const GroupOutcome out = group.run(log, rec);
        QVERIFY(out.setup_failure);
        const std::string m = out.runs.front().failure;
        QVERIFY2(m.find("synthetic-text is a word-level text corpus") != std::string::npos &&
                     m.find("mlp takes images") != std::string::npos,
                 m.c_str());
    }
    // With no dataset named, a language model gets synthetic-text.
    RunConfig unnamed = lm_config(Policy::FP32, 1);
    unnamed.dataset.name.clear();
    unnamed.steps = 2;
    RunGroup group(tiny_lm(false), {unnamed});
    RunLog log;
    Recorder rec;
    const GroupOutcome out = group.run(log, rec);
    QVERIFY(!out.setup_failure);
    QVERIFY(rec.facts);
    QCOMPARE(rec.facts->dataset_name, std::string("synthetic-text"));
}

// 20 columns of bptt 35 need 36 tokens each: a test split of 400 tokens (a tenth of 4000)
// cannot hold one batch, and the message names it.
void TestLmTraining::corpusShorterThanABatch()
{
    RunConfig c = lm_config(Policy::FP32, 1);
    c.dataset.synthetic_text_tokens = 4000;
    c.batch_size = 20;
    c.bptt = 35;
    RunGroup group(tiny_lm(false), {c});
    RunLog log;
    Recorder rec;
    const GroupOutcome out = group.run(log, rec);
    QVERIFY(out.setup_failure);
    const std::string m = out.runs.front().failure;
    QVERIFY2(m.find("valid") != std::string::npos || m.find("test") != std::string::npos,
             m.c_str());
}

// The profile counts a layer's per-token FLOPs over every token of the step (batch x
// bptt), not over the batch alone: the lstm's forward and backward are 3x its forward.
void TestLmTraining::profileCountsEveryToken()
{
    RunConfig c = lm_config(Policy::FP32, 1);
    c.steps = 6;
    RunGroupOptions options;
    options.profile_steps = 2;
    RunGroup group(tiny_lm(false), {c}, options);
    RunLog log;
    Recorder rec;
    const GroupOutcome out = group.run(log, rec);
    QCOMPARE(out.runs.front().status, RunOutcome::Status::Finished);
    QVERIFY(out.runs.front().profile.has_value());
    const Graph g = build_graph(tiny_lm(false), Shape::tokens(), c.dataset.synthetic_text_vocab);
    const double tokens = double(c.batch_size) * c.bptt;
    bool seen = false;
    for (const LayerTime& t : out.runs.front().profile->layers)
        if (t.type == "lstm") {
            seen = true;
            QCOMPARE(t.flops, 3.0 * double(g.layers[1].flops) * tokens);
        }
    QVERIFY(seen);
}

MIXLAB_TEST_MAIN_ONE_OMP_THREAD(TestLmTraining, QCoreApplication)
#include "tst_lm_training.moc"
