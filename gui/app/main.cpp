// mixlab: the desktop app. Options let a script run a job and keep a screenshot of the
// result (README's picture is made this way), e.g.
//   mixlab --dataset synthetic --epochs 2 --compare --screenshot shot.png
#include "app/aboutdialog.h"
#include "files/autosave.h"
#include "common/deviceprobe.h"
#include "files/logexport.h"
#include "runs/logview.h"
#include "app/mainwindow.h"
#include "runs/maxbatchdialog.h"
#include "designer/modeldesigner.h"
#include "runs/runcontroller.h"
#include "runs/runpanel.h"
#include "common/usermessages.h"

#include "mixlab/backend.h"
#include "mixlab/model_spec.h"
#include "mixlab/policy.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <string>

namespace {

// Calls `then` each time the window's job (a run or a compare) ends.
template <typename Then>
void whenJobEnds(MainWindow &window, Then then)
{
    QObject::connect(window.controller(), &RunController::runningChanged, &window,
                     [then](bool running) {
                         if (!running) then();
                     });
}

// Saves the window to `file` once the charts have taken in the last data, then quits.
void screenshotAndQuit(MainWindow &window, const QString &file)
{
    QTimer::singleShot(1500, &window, [&window, file] {
        if (!window.grab().save(file))
            std::fprintf(stderr, "mixlab: could not write %s\n", qPrintable(file));
        window.setConfirmCloseForTesting(false);
        window.close();
    });
}

} // namespace

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("MixLab"));
    QApplication::setApplicationName(QStringLiteral("mixlab"));
    QApplication::setApplicationDisplayName(QStringLiteral("MixLab"));
    QApplication::setApplicationVersion(QStringLiteral(MIXLAB_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("MixLab: mixed-precision training experiments"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("experiment"),
                                 QStringLiteral("A .mixlab.json file to open."),
                                 QStringLiteral("[experiment]"));
    const QCommandLineOption dataset(
        QStringLiteral("dataset"),
        QStringLiteral("fashion-mnist, synthetic, synthetic-text, or a MNIST/CIFAR or word-corpus "
                       "(train.txt, valid.txt, test.txt) folder."),
        QStringLiteral("name"));
    const QCommandLineOption preset(
        QStringLiteral("preset"),
        QStringLiteral("Load this built-in model (e.g. word-lm-small, small-cnn) into the "
                       "designer; a language model brings its run settings, which the other "
                       "options then override."),
        QStringLiteral("name"));
    const QCommandLineOption bptt(QStringLiteral("bptt"),
                                  QStringLiteral("Language models: the BPTT window in words."),
                                  QStringLiteral("n"));
    const QCommandLineOption clip(QStringLiteral("clip"),
                                  QStringLiteral("Gradient clipping norm (0: off)."),
                                  QStringLiteral("x"));
    const QCommandLineOption lr(QStringLiteral("lr"), QStringLiteral("Learning rate."),
                                QStringLiteral("x"));
    const QCommandLineOption syntheticVocab(
        QStringLiteral("synthetic-vocab"),
        QStringLiteral("Words in synthetic-text's vocabulary (default 10000)."),
        QStringLiteral("n"));
    const QCommandLineOption sampleWords(
        QStringLiteral("sample-words"),
        QStringLiteral("Language models: words each run writes when it ends (default 100; 0: "
                       "none); shown in the Sample text tab."),
        QStringLiteral("n"));
    const QCommandLineOption epochs(QStringLiteral("epochs"), QStringLiteral("Epochs per run."),
                                    QStringLiteral("n"));
    const QCommandLineOption batch(QStringLiteral("batch"), QStringLiteral("Batch size."),
                                   QStringLiteral("n"));
    const QCommandLineOption steps(QStringLiteral("steps"),
                                   QStringLiteral("Stop each run after this many steps."),
                                   QStringLiteral("n"));
    const QCommandLineOption syntheticSize(
        QStringLiteral("synthetic-size"),
        QStringLiteral("Training samples of the synthetic dataset (test split: n/5, rounded up); "
                       "for synthetic-text, training tokens."),
        QStringLiteral("n"));
    const QCommandLineOption device(QStringLiteral("device"), QStringLiteral("auto, cpu or cuda."),
                                    QStringLiteral("choice"));
    const QCommandLineOption start(QStringLiteral("start"), QStringLiteral("Start a run at once."));
    const QCommandLineOption compare(QStringLiteral("compare"),
                                     QStringLiteral("Start a precision comparison at once."));
    const QCommandLineOption size(QStringLiteral("size"),
                                  QStringLiteral("Window size, e.g. 1600x1000."),
                                  QStringLiteral("WxH"));
    const QCommandLineOption screenshot(
        QStringLiteral("screenshot"),
        QStringLiteral("When the started job ends (with no job: once the window is drawn, e.g. "
                       "with an experiment opened), save the window to this PNG and quit."),
        QStringLiteral("file"));
    const QCommandLineOption model(
        QStringLiteral("model"),
        QStringLiteral(
            "Load this model file into the designer: a MixLab model (mixlab-model/1), or a "
            "Keras model (model.to_json() JSON, or .keras), which brings its policy."),
        QStringLiteral("file"));
    const QCommandLineOption policies(QStringLiteral("policies"),
                                      QStringLiteral("Policies to compare, e.g. fp32,mixed_fp16."),
                                      QStringLiteral("list"));
    const QCommandLineOption logJson(
        QStringLiteral("log-json"),
        QStringLiteral(
            "When the started job ends, write every run's log here (the CLI's JSON format)."),
        QStringLiteral("file"));
    const QCommandLineOption save(
        QStringLiteral("save"),
        QStringLiteral(
            "When the started job ends, save the experiment (model, settings, every run) here."),
        QStringLiteral("file"));
    const QCommandLineOption why(
        QStringLiteral("why"),
        QStringLiteral("When the started job ends, open the Why? panel on it (with no job: on the "
                       "newest finished group), before --screenshot."));
    const QCommandLineOption numerics(
        QStringLiteral("numerics"),
        QStringLiteral("When the started job ends, open the Numerics dock on it (with no job: on "
                       "the newest run), before --screenshot."));
    const QCommandLineOption numericsEvery(
        QStringLiteral("numerics-every"),
        QStringLiteral("Sample each layer's numerics every n steps (0: off; the app's default "
                       "is %1).")
            .arg(RunPanel::k_defaultNumericsEvery),
        QStringLiteral("n"));
    const QCommandLineOption about(
        QStringLiteral("about"),
        QStringLiteral("Open the About dialog (device facts, ceilings); with --screenshot and no "
                       "job, save the dialog and quit."));
    const QCommandLineOption maxBatch(
        QStringLiteral("max-batch"),
        QStringLiteral("Open \"Find largest batch\" and start the search; with --screenshot, save "
                       "the dialog when it ends and quit."));
    const QCommandLineOption noRecover(
        QStringLiteral("no-recover"),
        QStringLiteral("Do not offer to recover an experiment autosaved by a session that crashed "
                       "(the autosave stays for a later start)."));
    const QCommandLineOption noAutosave(
        QStringLiteral("no-autosave"),
        QStringLiteral(
            "Do not autosave the experiment (every 60 s when changed, and at epoch ends)."));
    for (const auto &o :
         {dataset, epochs, batch,          steps,       syntheticSize, device,       start,
          compare, size,   screenshot,     model,       policies,      logJson,      save,
          why,     about,  maxBatch,       noRecover,   noAutosave,    preset,       bptt,
          clip,    lr,     syntheticVocab, sampleWords, numerics,      numericsEvery})
        parser.addOption(o);
    parser.process(app);

    MainWindow window;
    if (parser.isSet(size)) {
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        if (wh.size() == 2 && wh[0].toInt() > 0 && wh[1].toInt() > 0)
            window.resize(wh[0].toInt(), wh[1].toInt());
    }
    window.show();
    // When the CUDA module could not be loaded (a library missing), say so once the device
    // probe has run (it loads the module off the GUI thread): log pane and stderr.
    QObject::connect(window.deviceProbe(), &DeviceProbe::probed, &window, [&window] {
        const std::string why = mixlab::cuda_backend_unavailable_reason();
        if (why.rfind("CUDA backend not loaded", 0) != 0) return;
        const std::string line = why + "; using the CPU backend";
        window.logView()->appendMessage(QString::fromStdString(line),
                                        mixlab::RunEvent::Kind::Warning);
        std::fprintf(stderr, "mixlab: %s\n", line.c_str());
    });

    // A scripted run (a screenshot, a job started at once) must not stop at a question.
    const bool scripted = parser.isSet(screenshot) || parser.isSet(start) ||
                          parser.isSet(compare) || parser.isSet(about) || parser.isSet(maxBatch);
    if (!parser.isSet(noAutosave)) {
        QString error;
        if (!window.startAutosave(Autosave::defaultDirectory(), &error))
            std::fprintf(stderr, "mixlab: autosave is off: %s\n", qPrintable(error));
    }
    if (!scripted && !parser.isSet(noRecover)) window.offerRecovery(Autosave::defaultDirectory());

    if (!parser.positionalArguments().isEmpty())
        window.openFromCommandLine(parser.positionalArguments().front());
    // Before the settings below: a language model's defaults come with it, the options
    // given here override them.
    if (parser.isSet(preset) && !window.designer()->loadPreset(parser.value(preset))) {
        std::fprintf(stderr, "mixlab: no preset \"%s\"; the built-in ones: %s\n",
                     qPrintable(parser.value(preset)),
                     qPrintable(window.designer()->presetNames().join(QStringLiteral(", "))));
        return 2;
    }
    try {
        if (parser.isSet(policies)) {
            std::vector<mixlab::Policy> chosen;
            for (const QString &name :
                 parser.value(policies).split(QLatin1Char(','), Qt::SkipEmptyParts))
                chosen.push_back(mixlab::parse_policy(name.trimmed().toStdString()));
            window.runPanel()->setComparePolicies(chosen);
        }
        mixlab::RunConfig config = window.runPanel()->config();
        if (parser.isSet(dataset)) config.dataset.name = parser.value(dataset).toStdString();
        if (parser.isSet(epochs)) config.epochs = parser.value(epochs).toInt();
        if (parser.isSet(batch)) config.batch_size = parser.value(batch).toInt();
        if (parser.isSet(steps)) config.steps = parser.value(steps).toLongLong();
        if (parser.isSet(syntheticSize)) {
            if (config.dataset.name == "synthetic-text") {
                config.dataset.synthetic_text_tokens = parser.value(syntheticSize).toLongLong();
            } else {
                config.dataset.synthetic_train = parser.value(syntheticSize).toLongLong();
                config.dataset.synthetic_test =
                    mixlab::synthetic_test_size(config.dataset.synthetic_train);
            }
        }
        if (parser.isSet(syntheticVocab))
            config.dataset.synthetic_text_vocab = parser.value(syntheticVocab).toInt();
        if (parser.isSet(bptt)) config.bptt = parser.value(bptt).toInt();
        if (parser.isSet(clip)) config.optimizer.clip_norm = parser.value(clip).toFloat();
        if (parser.isSet(lr)) config.optimizer.lr = parser.value(lr).toFloat();
        if (parser.isSet(numericsEvery))
            config.numerics_every = std::max(0, parser.value(numericsEvery).toInt());
        if (parser.isSet(sampleWords)) {
            TextSampling sampling = window.runPanel()->textSampling();
            sampling.words = std::max(0, parser.value(sampleWords).toInt());
            window.runPanel()->setTextSampling(sampling);
        }
        if (parser.isSet(device))
            config.device = mixlab::parse_device_choice(parser.value(device).toStdString());
        window.runPanel()->setConfig(config);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mixlab: %s\n", e.what());
        return 2;
    }
    // After the dataset is set: the model is checked against the data it will train on.
    if (parser.isSet(model)) {
        QString error;
        if (!window.importModel(parser.value(model), &error)) {
            if (scripted) {
                std::fprintf(stderr, "mixlab: %s\n", qPrintable(error));
                return 2;
            }
            showUserError(&window, QStringLiteral("Import model"),
                          QStringLiteral("Could not import the model %1:\n%2")
                              .arg(parser.value(model), error));
        }
    }

    if (parser.isSet(about)) {
        auto *dialog = new AboutDialog(
            window.deviceKnown() ? window.deviceInfo() : DeviceProbe::probeNow(), &window);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->show();
        if (parser.isSet(screenshot) && !parser.isSet(start) && !parser.isSet(compare)) {
            const QString file = parser.value(screenshot);
            // Once the dialog is laid out and painted.
            QTimer::singleShot(500, dialog, [dialog, file] {
                const bool saved = dialog->grab().save(file);
                if (!saved) std::fprintf(stderr, "mixlab: could not write %s\n", qPrintable(file));
                QCoreApplication::exit(saved ? 0 : 1);
            });
        }
    }

    if (parser.isSet(maxBatch)) {
        const QString file = parser.isSet(screenshot) ? parser.value(screenshot) : QString();
        // After the first event-loop turn, so the window is laid out and shown.
        QTimer::singleShot(0, &window, [&window, file] {
            MaxBatchDialog *dialog = window.showMaxBatchDialog();
            if (!file.isEmpty()) {
                QObject::connect(dialog, &MaxBatchDialog::searchFinished, dialog, [dialog, file] {
                    // Once the last trial is drawn and the dialog repainted.
                    QTimer::singleShot(500, dialog, [dialog, file] {
                        const bool saved = dialog->grab().save(file);
                        if (!saved)
                            std::fprintf(stderr, "mixlab: could not write %s\n", qPrintable(file));
                        QCoreApplication::exit(saved ? 0 : 1);
                    });
                });
            }
            dialog->start();
            if (!dialog->isRunning())
                std::fprintf(stderr, "mixlab: the search did not start: %s\n",
                             qPrintable(dialog->errorText()));
        });
    }

    if (parser.isSet(start) || parser.isSet(compare)) {
        const bool comparing = parser.isSet(compare);
        const bool screenshotting = parser.isSet(screenshot);
        // After the first event-loop turn, so the window is laid out and shown.
        QTimer::singleShot(0, &window, [&window, comparing, screenshotting] {
            if (comparing)
                window.startCompare();
            else
                window.startRun();
            if (!window.controller()->isRunning()) {
                const QString why = comparing ? window.runPanel()->compareBlockReason()
                                              : window.runPanel()->startBlockReason();
                std::fprintf(stderr, "mixlab: the job did not start: %s%s\n", qPrintable(why),
                             comparing && !window.runPanel()->isStartBlocked()
                                 ? " (--policies names them; --start trains one)"
                                 : "");
                if (screenshotting) QCoreApplication::exit(1);
            }
        });
        if (parser.isSet(logJson))
            whenJobEnds(window, [&window, file = parser.value(logJson)] {
                QString error;
                if (!exportLogs(*window.store(), window.store()->runIds(), file, &error))
                    std::fprintf(stderr, "mixlab: %s\n", qPrintable(error));
            });
        if (parser.isSet(save))
            whenJobEnds(window, [&window, file = parser.value(save)] {
                QString error;
                if (!window.saveExperimentAs(file, &error))
                    std::fprintf(stderr, "mixlab: %s\n", qPrintable(error));
            });
        // Connected before the screenshot's handler, so the panel is open when it fires.
        if (parser.isSet(why)) whenJobEnds(window, [&window] { window.showWhy(); });
        if (parser.isSet(numerics)) whenJobEnds(window, [&window] { window.openNumerics(); });
        if (parser.isSet(screenshot))
            whenJobEnds(window, [&window, file = parser.value(screenshot)] {
                screenshotAndQuit(window, file);
            });
    } else if (parser.isSet(screenshot) && !parser.isSet(about) && !parser.isSet(maxBatch)) {
        // No job: the window as it opened (an experiment's runs, say), once it is drawn.
        QTimer::singleShot(0, &window,
                           [&window, file = parser.value(screenshot), openWhy = parser.isSet(why),
                            openNumerics = parser.isSet(numerics)] {
                               if (openWhy) window.showWhy();
                               if (openNumerics) window.openNumerics();
                               screenshotAndQuit(window, file);
                           });
    }
    return app.exec();
}
