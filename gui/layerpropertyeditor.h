// LayerPropertyEditor: the form under the designer's layer list that edits the selected
// layer's settings. It never changes the spec itself: it reports each edit so the
// designer can push an undoable command.
#pragma once
#include "layercommands.h"
#include "mixlab/model_spec.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QSpinBox;

class LayerPropertyEditor : public QWidget {
    Q_OBJECT
public:
    explicit LayerPropertyEditor(QWidget *parent = nullptr);

    // Shows a layer's settings; emits nothing.
    void setLayer(int index, const mixlab::LayerSpec &layer);
    // Shows "no layer selected".
    void clearLayer();
    int layerIndex() const { return m_index; }

signals:
    // One field of layer `index` changed from `before` to `after` (both whole layers).
    void layerEdited(int index, LayerField field, const mixlab::LayerSpec &before,
                     const mixlab::LayerSpec &after);

private:
    void edit(LayerField field, const mixlab::LayerSpec &after);
    void showRows();

    int m_index = -1;
    mixlab::LayerSpec m_layer;
    QLabel *m_title = nullptr;
    QFormLayout *m_form = nullptr;
    QSpinBox *m_units = nullptr;
    QComboBox *m_activation = nullptr;
    QCheckBox *m_useBias = nullptr;
    QDoubleSpinBox *m_rate = nullptr;
    QCheckBox *m_forceFp32 = nullptr;
};
