// LayerPropertyEditor: the form under the designer's layer tree that edits the selected
// layer's settings, nested ones included. It never changes the spec itself: it reports
// each edit so the designer can push an undoable command.
#pragma once
#include "designer/layercommands.h"
#include "designer/layerpath.h"
#include "mixlab/model_spec.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;

class LayerPropertyEditor : public QWidget {
    Q_OBJECT
public:
    explicit LayerPropertyEditor(QWidget *parent = nullptr);

    // Shows a layer's settings; emits nothing.
    void setLayer(const LayerPath &path, const mixlab::LayerSpec &layer);
    // Shows what a selected body/shortcut row is for (no fields).
    void showGroup(const LayerPath &groupPath, const mixlab::LayerSpec &block);
    // Shows "no layer selected".
    void clearLayer();
    // The count "units": "classes"/"vocab" and "vocab": "dataset" stand for, shown in their
    // disabled fields (the next setLayer shows it).
    void setDatasetClasses(int classes) { m_datasetClasses = classes; }
    // The layer shown; empty when none (or a group).
    LayerPath layerPath() const { return m_path; }

signals:
    // One field of the layer at `path` changed from `before` to `after` (whole layers).
    void layerEdited(const LayerPath &path, LayerField field, const mixlab::LayerSpec &before,
                     const mixlab::LayerSpec &after);

private:
    void edit(LayerField field, const mixlab::LayerSpec &after);
    void showRows();
    void fillActivations(bool residual);
    void editStride();

    LayerPath m_path;
    mixlab::LayerSpec m_layer;
    int m_datasetClasses = 0; // 0: unknown
    QLabel *m_title = nullptr;
    QLabel *m_note = nullptr;
    QFormLayout *m_form = nullptr;
    QWidget *m_unitsRow = nullptr;
    QSpinBox *m_units = nullptr;
    QCheckBox *m_unitsPerClass = nullptr;
    QCheckBox *m_unitsPerWord = nullptr; // a language model's decoder: "units": "vocab"
    QCheckBox *m_tieWeights = nullptr;
    QWidget *m_vocabRow = nullptr; // embedding
    QSpinBox *m_vocab = nullptr;
    QCheckBox *m_vocabFromData = nullptr;
    QSpinBox *m_dim = nullptr;
    QSpinBox *m_hidden = nullptr; // lstm
    QSpinBox *m_numLayers = nullptr;
    QSpinBox *m_filters = nullptr;
    QWidget *m_kernelRow = nullptr;
    QSpinBox *m_kernelH = nullptr;
    QSpinBox *m_kernelW = nullptr;
    QWidget *m_strideRow = nullptr;
    QSpinBox *m_strideH = nullptr;
    QSpinBox *m_strideW = nullptr;
    QWidget *m_paddingRow = nullptr;
    QComboBox *m_padding = nullptr;
    QSpinBox *m_padH = nullptr;
    QSpinBox *m_padW = nullptr;
    QDoubleSpinBox *m_momentum = nullptr;
    QLineEdit *m_epsilon = nullptr;
    QComboBox *m_activation = nullptr;
    QCheckBox *m_useBias = nullptr;
    QDoubleSpinBox *m_rate = nullptr;
    QCheckBox *m_forceFp32 = nullptr;
    QCheckBox *m_noFp8 = nullptr;
};
