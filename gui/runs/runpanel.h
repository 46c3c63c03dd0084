// RunPanel: the run settings (dataset, precision policy, batch, epochs or steps, optimizer,
// seed, loss scaling, device, training augmentation, stop on a NaN/Inf loss, numerics
// sampling), the policies
// to compare, and the Start / Compare / Stop buttons with the reason Start is blocked,
// which stay in view below the settings when those scroll.
// It edits a plain mixlab::RunConfig; settings it has no control for are kept as given.
// For a language model it shows the LmSettingsBox and switches to the word-language-model
// example's settings once (lmdefaults.h), keeping what the user set by hand.
#pragma once
#include "runs/lmdefaults.h"
#include "runs/workermessages.h"
#include "mixlab/backend.h"
#include "mixlab/graph.h"
#include "mixlab/run_config.h"

#include <QKeySequence>
#include <QString>
#include <QWidget>

#include <map>
#include <optional>
#include <set>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class LmSettingsBox;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;

class RunPanel : public QWidget {
    Q_OBJECT
public:
    explicit RunPanel(QWidget *parent = nullptr);

    // What a new experiment samples its numerics at (RunConfig::numerics_every): often
    // enough for a heatmap of a short run, rarely enough to cost little step time (bench/
    // NOTES.md 27: under 2% of the step on W1 and W2 on the H200; every 50 was 2.2% for W1
    // at batch 32). The CLI's default stays off.
    static constexpr int k_defaultNumericsEvery = 100;

    mixlab::RunConfig config() const;
    void setConfig(const mixlab::RunConfig &c);
    std::vector<mixlab::Policy> comparePolicies() const;
    // Split bf16 masters checked and usable: for the panel's own policy, or for a
    // comparison's mixed_bf16 run.
    bool splitMastersChosen() const;
    void setComparePolicies(const std::vector<mixlab::Policy> &p);
    void setDeviceInfo(const mixlab::DeviceInfo &info);
    void setRunning(bool running);
    void setStartBlocked(const QString &reason); // empty = allowed
    // Run > Start from weights: the safetensors file the next job's runs start from
    // (RunGroupOptions::load_weights), shown above the buttons; empty: none.
    QString startWeights() const { return m_startWeights; }
    void setStartWeights(const QString &path);
    // The keys of the window's Start / Compare / Stop actions, named in the buttons' tooltips.
    void setShortcuts(const QKeySequence &start, const QKeySequence &compare,
                      const QKeySequence &stop);

    // The chosen dataset's per-sample shape and classes (what datasetChanged last said):
    // Shape::tokens() and the vocabulary for a text corpus.
    mixlab::Shape datasetShape() const { return m_shape; }
    int datasetClasses() const { return m_classes; }
    bool isTextDataset() const { return m_shape.is_tokens(); }
    // Selects a MNIST/CIFAR or text-corpus folder after loading it once to learn its shape.
    // On failure returns false with the loader's message and keeps the current dataset.
    bool selectDatasetFolder(const QString &folder, QString *error);
    // Why a policy cannot run on the chosen device; empty when it can.
    QString policyBlockReason(mixlab::Policy p) const;
    // What a user should know about a policy on the chosen device (mixed_fp8: emulated on
    // the CPU, which layers run in fp8); empty for most.
    QString policyNote(mixlab::Policy p) const;
    bool isStartBlocked() const { return !m_blockReason.isEmpty(); }
    QString startBlockReason() const { return m_blockReason; }
    // Why Compare precisions cannot start: the start's block reason, or fewer than two
    // checked policies that can run on the chosen device; empty when it can.
    QString compareBlockReason() const;

    // The designer's model is (or stopped being) a language model. Becoming one shows the
    // language-model settings and applies the example's defaults to every field not edited
    // by hand since the settings were last loaded (setConfig), naming what changed in
    // lmDefaultsNote(); an image model again gets the replaced values back.
    void setLanguageModel(bool languageModel);
    bool isLanguageModel() const { return m_languageModel; }
    QString lmDefaultsNote() const;
    // What each language-model run writes when it ends.
    TextSampling textSampling() const;
    void setTextSampling(const TextSampling &s);

signals:
    void startRequested();
    void compareRequested();
    void stopRequested();
    void datasetChanged(const mixlab::Shape &input, int classes);
    void configChanged();
    void startWeightsChanged(const QString &path);
    // Something the user should read in the log (a dataset folder that failed to load).
    void message(const QString &text);

private:
    enum class LengthUnit { Epochs, Steps };
    LengthUnit lengthUnit() const;
    void showLengthUnit();
    void onDatasetActivated(int index);
    void selectDataset(const std::string &name);
    void chooseFolder();
    void updateDeviceDependent();
    void updateButtons();
    void updateOptimizerFields();
    void updateMasterWeights(); // enabled for the policies split masters apply to
    void markEdited(RunField field);
    void showLmDefaultsNote(const QString &text);
    mixlab::DeviceInfo effectiveDevice() const;
    int addFolderItem(const QString &folder);

    QComboBox *m_dataset = nullptr;
    QComboBox *m_policy = nullptr;
    QSpinBox *m_batch = nullptr;
    QSpinBox *m_epochs = nullptr;
    QSpinBox *m_steps = nullptr;       // RunConfig::steps, shown instead of m_epochs
    QComboBox *m_lengthUnit = nullptr; // epochs | steps
    QComboBox *m_optimizer = nullptr;
    QLineEdit *m_lr = nullptr;
    QDoubleSpinBox *m_momentum = nullptr;
    QLineEdit *m_clip = nullptr;         // OptimizerConfig::clip_norm, 0 = off
    QCheckBox *m_splitMasters = nullptr; // OptimizerConfig::master_weights, mixed_bf16 only
    LmSettingsBox *m_lmBox = nullptr;
    QLabel *m_lmNote = nullptr; // what the language-model defaults changed
    QLineEdit *m_seed = nullptr;
    QComboBox *m_lossScale = nullptr;
    QComboBox *m_device = nullptr;
    QCheckBox *m_crop = nullptr;
    QSpinBox *m_cropPadding = nullptr;
    QCheckBox *m_flip = nullptr;
    QCheckBox *m_stopOnNan = nullptr;    // RunConfig::stop_on_non_finite_loss
    QSpinBox *m_numericsEvery = nullptr; // RunConfig::numerics_every, 0 = off
    QLabel *m_deviceLabel = nullptr;
    std::map<mixlab::Policy, QCheckBox *> m_compare;
    QPushButton *m_start = nullptr;
    QPushButton *m_compareButton = nullptr;
    QPushButton *m_stop = nullptr;
    QLabel *m_blockLabel = nullptr;
    QWidget *m_startWeightsRow = nullptr;
    QLabel *m_startWeightsLabel = nullptr;
    QString m_startWeights;
    QScrollArea *m_scroll = nullptr; // the settings, above the buttons
    QKeySequence m_startKey, m_compareKey, m_stopKey;

    mixlab::RunConfig m_base;  // fields without a control, kept through setConfig
    mixlab::DeviceInfo m_info; // the probed device (backend "" until known)
    bool m_infoKnown = false;
    bool m_compareTouched = false; // the user chose compare policies: keep them
    bool m_running = false;
    QString m_blockReason;
    mixlab::Shape m_shape;
    int m_classes = 0;
    int m_lastDatasetIndex = 0;
    std::map<QString, std::pair<mixlab::Shape, int>> m_folderShapes;
    bool m_languageModel = false;
    std::set<RunField> m_edited;                 // by hand since the last setConfig
    std::optional<mixlab::RunConfig> m_beforeLm; // what the defaults replaced
    std::set<RunField> m_lmApplied;
};
