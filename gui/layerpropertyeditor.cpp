// LayerPropertyEditor: one form row per layer field, shown only for the layer types
// that have the field; every user change becomes a layerEdited signal.
#include "layerpropertyeditor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

using mixlab::Activation;
using mixlab::LayerSpec;
using mixlab::LayerType;

namespace {

// The parser's limit on "units" (model_spec.cpp): larger is refused there too.
constexpr int k_maxUnits = 1000000;

constexpr Activation k_activations[] = {Activation::None, Activation::Relu, Activation::Sigmoid,
                                        Activation::Tanh, Activation::Gelu, Activation::Softmax};

} // namespace

LayerPropertyEditor::LayerPropertyEditor(QWidget *parent) : QWidget(parent) {
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("layerTitle"));
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    outer->addWidget(m_title);

    m_form = new QFormLayout;
    m_form->setFieldGrowthPolicy(QFormLayout::FieldsStayAtSizeHint);
    outer->addLayout(m_form);
    outer->addStretch(1);

    m_units = new QSpinBox(this);
    m_units->setObjectName(QStringLiteral("units"));
    m_units->setRange(1, k_maxUnits);
    m_units->setGroupSeparatorShown(true);
    m_units->setMinimumWidth(110);
    // A typed number commits on Enter or when focus leaves, so "3000" is one edit and
    // not four half-typed models that fail validation on the way.
    m_units->setKeyboardTracking(false);
    m_units->setToolTip(tr("Outputs of the layer. Multiples of 8 let its fp16/bf16 GEMM run "
                           "on tensor cores."));
    m_form->addRow(tr("Units"), m_units);

    m_activation = new QComboBox(this);
    m_activation->setObjectName(QStringLiteral("activation"));
    for (Activation a : k_activations) {
        const auto name = mixlab::activation_name(a);
        m_activation->addItem(QString::fromUtf8(name.data(), qsizetype(name.size())), int(a));
    }
    m_form->addRow(tr("Activation"), m_activation);

    m_useBias = new QCheckBox(tr("learned bias"), this);
    m_useBias->setObjectName(QStringLiteral("useBias"));
    m_form->addRow(tr("Bias"), m_useBias);

    m_rate = new QDoubleSpinBox(this);
    m_rate->setObjectName(QStringLiteral("rate"));
    m_rate->setRange(0.0, 0.99);
    m_rate->setDecimals(2);
    m_rate->setSingleStep(0.05);
    m_rate->setKeyboardTracking(false);
    m_rate->setToolTip(tr("Fraction of the inputs zeroed in training."));
    m_form->addRow(tr("Rate"), m_rate);

    m_forceFp32 = new QCheckBox(tr("keep in float32"), this);
    m_forceFp32->setObjectName(QStringLiteral("forceFp32"));
    m_forceFp32->setToolTip(tr("Run this layer in float32 under mixed policies (Keras's "
                               "dtype=\"float32\"): the usual choice for the output "
                               "softmax or sigmoid."));
    m_form->addRow(tr("Precision"), m_forceFp32);

    connect(m_units, &QSpinBox::valueChanged, this, [this](int v) {
        LayerSpec l = m_layer;
        l.units = v;
        edit(LayerField::Units, l);
    });
    connect(m_activation, &QComboBox::currentIndexChanged, this, [this](int i) {
        LayerSpec l = m_layer;
        l.activation = Activation(m_activation->itemData(i).toInt());
        edit(LayerField::Activation, l);
    });
    connect(m_useBias, &QCheckBox::toggled, this, [this](bool on) {
        LayerSpec l = m_layer;
        l.use_bias = on;
        edit(LayerField::UseBias, l);
    });
    connect(m_rate, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        LayerSpec l = m_layer;
        l.rate = float(v);
        edit(LayerField::Rate, l);
    });
    connect(m_forceFp32, &QCheckBox::toggled, this, [this](bool on) {
        LayerSpec l = m_layer;
        l.force_fp32 = on;
        edit(LayerField::ForceFp32, l);
    });

    clearLayer();
}

void LayerPropertyEditor::setLayer(int index, const LayerSpec &layer) {
    m_index = index;
    m_layer = layer;
    const QSignalBlocker b1(m_units), b2(m_activation), b3(m_useBias), b4(m_rate), b5(m_forceFp32);
    const auto type = mixlab::layer_type_name(layer.type);
    m_title->setText(tr("Layer %1: %2")
                         .arg(index)
                         .arg(QString::fromUtf8(type.data(), qsizetype(type.size()))));
    if (layer.type == LayerType::Dense) m_units->setValue(layer.units);
    m_activation->setCurrentIndex(m_activation->findData(int(layer.activation)));
    m_useBias->setChecked(layer.use_bias);
    m_rate->setValue(double(layer.rate));
    m_forceFp32->setChecked(layer.force_fp32);
    showRows();
}

void LayerPropertyEditor::clearLayer() {
    m_index = -1;
    m_layer = LayerSpec{};
    m_title->setText(tr("No layer selected"));
    showRows();
}

void LayerPropertyEditor::showRows() {
    const bool any = m_index >= 0;
    const LayerType t = m_layer.type;
    m_form->setRowVisible(m_units, any && t == LayerType::Dense);
    m_form->setRowVisible(m_activation,
                          any && (t == LayerType::Dense || t == LayerType::Activation));
    m_form->setRowVisible(m_useBias, any && t == LayerType::Dense);
    m_form->setRowVisible(m_rate, any && t == LayerType::Dropout);
    m_form->setRowVisible(m_forceFp32, any);
    m_activation->setToolTip(t == LayerType::Dense
                                 ? tr("Applied to the layer's output (fused into its GEMM "
                                      "where the backend can).")
                                 : tr("The function applied element-wise."));
}

void LayerPropertyEditor::edit(LayerField field, const LayerSpec &after) {
    if (m_index < 0) return;
    const LayerSpec before = m_layer;
    m_layer = after;
    emit layerEdited(m_index, field, before, after);
}
