// LayerPropertyEditor: one form row per layer field, shown only for the layer types
// that have the field; every user change becomes a layerEdited signal.
#include "designer/layerpropertyeditor.h"

#include "common/enginetext.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

using mixlab::Activation;
using mixlab::LayerSpec;
using mixlab::LayerType;
using mixlab::Padding;

namespace {

// The parser's limit on "units" (model_spec.cpp): larger is refused there too.
constexpr int k_maxUnits = 1000000;
constexpr int k_maxWindow = 64;
// The parser's limits on an embedding's "vocab" and an lstm's "layers".
constexpr int k_maxVocab = 1000000;
constexpr int k_maxLstmLayers = 16;

constexpr Activation k_activations[] = {Activation::None, Activation::Relu, Activation::Sigmoid,
                                        Activation::Tanh, Activation::Gelu, Activation::Softmax};

bool isPool(LayerType t) { return t == LayerType::MaxPool2D || t == LayerType::AvgPool2D; }
bool isWindowed(LayerType t) { return t == LayerType::Conv2D || isPool(t); }

// The stride a layer runs with when it names none: 1 for a convolution, the window for
// pooling (as in Keras and PyTorch).
std::pair<int, int> defaultStride(const LayerSpec &l)
{
    if (isPool(l.type)) return {l.kernel_h, l.kernel_w};
    return {1, 1};
}

QSpinBox *spin(QWidget *parent, const char *name, int lo, int hi)
{
    auto *s = new QSpinBox(parent);
    s->setObjectName(QLatin1String(name));
    s->setRange(lo, hi);
    // A typed number commits on Enter or when focus leaves, so "3000" is one edit and
    // not four half-typed models that fail validation on the way.
    s->setKeyboardTracking(false);
    return s;
}

// A row of widgets as one form field.
QWidget *row(QWidget *parent, std::initializer_list<QWidget *> parts)
{
    auto *w = new QWidget(parent);
    auto *l = new QHBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 0);
    l->setSpacing(4);
    for (QWidget *p : parts) {
        p->setParent(w);
        l->addWidget(p);
    }
    l->addStretch(1);
    return w;
}

} // namespace

LayerPropertyEditor::LayerPropertyEditor(QWidget *parent) : QWidget(parent)
{
    auto *outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("layerTitle"));
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    outer->addWidget(m_title);
    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("layerNote"));
    m_note->setWordWrap(true);
    outer->addWidget(m_note);

    m_form = new QFormLayout;
    m_form->setFieldGrowthPolicy(QFormLayout::FieldsStayAtSizeHint);
    outer->addLayout(m_form);
    outer->addStretch(1);

    m_units = spin(this, "units", 1, k_maxUnits);
    m_units->setGroupSeparatorShown(true);
    m_units->setMinimumWidth(110);
    m_units->setToolTip(tr("Outputs of the layer. Multiples of 8 let its fp16/bf16 GEMM run "
                           "on tensor cores."));
    m_unitsPerClass = new QCheckBox(tr("one per class"), this);
    m_unitsPerClass->setObjectName(QStringLiteral("unitsPerClass"));
    m_unitsPerClass->setToolTip(tr("As many units as the dataset has classes (\"units\": "
                                   "\"classes\"), so the model fits CIFAR-10 and CIFAR-100 alike"));
    m_unitsPerWord = new QCheckBox(tr("one per word"), this);
    m_unitsPerWord->setObjectName(QStringLiteral("unitsPerWord"));
    m_unitsPerWord->setToolTip(tr("A language model's decoder: one unit per word of the corpus's "
                                  "vocabulary (\"units\": \"vocab\"), its logits for the next "
                                  "word"));
    m_unitsRow = row(this, {m_units, m_unitsPerClass, m_unitsPerWord});
    m_form->addRow(tr("Units"), m_unitsRow);

    m_tieWeights = new QCheckBox(tr("tie to the embedding"), this);
    m_tieWeights->setObjectName(QStringLiteral("tieWeights"));
    m_tieWeights->setToolTip(tr("The decoder reads the embedding's table as its weights (the "
                                "example's --tied, Press & Wolf 2017): vocab x dim fewer "
                                "parameters, often a lower perplexity. Needs one unit per word "
                                "and an input as wide as the embedding's dim."));
    m_form->addRow(tr("Weights"), m_tieWeights);

    m_vocab = spin(this, "vocab", 1, k_maxVocab);
    m_vocab->setGroupSeparatorShown(true);
    m_vocab->setMinimumWidth(110);
    m_vocab->setToolTip(tr("Rows of the table: at least the corpus's number of words"));
    m_vocabFromData = new QCheckBox(tr("from the dataset"), this);
    m_vocabFromData->setObjectName(QStringLiteral("vocabFromData"));
    m_vocabFromData->setToolTip(tr("As many rows as the chosen corpus has words (\"vocab\": "
                                   "\"dataset\"), so one model fits every corpus"));
    m_vocabRow = row(this, {m_vocab, m_vocabFromData});
    m_form->addRow(tr("Vocabulary"), m_vocabRow);

    m_dim = spin(this, "dim", 1, k_maxUnits);
    m_dim->setToolTip(tr("Length of each word's vector: the LSTM's input width. Multiples of 8 "
                         "keep fp16/bf16 GEMMs on tensor cores; a tied decoder needs it equal "
                         "to the last LSTM's hidden size."));
    m_form->addRow(tr("Dimension"), m_dim);

    m_hidden = spin(this, "hidden", 1, k_maxUnits);
    m_hidden->setToolTip(tr("Units per LSTM layer. Each time step runs GEMMs of 4 x hidden "
                            "gate rows; multiples of 8 let fp16/bf16 use tensor cores (200, "
                            "650 and 1500 in the example: 650 is not, 656 is)."));
    m_form->addRow(tr("Hidden"), m_hidden);

    m_numLayers = spin(this, "numLayers", 1, k_maxLstmLayers);
    m_numLayers->setToolTip(tr("Stacked LSTM layers (nn.LSTM's num_layers); each reads the "
                               "sequence the one below it wrote"));
    m_form->addRow(tr("Layers"), m_numLayers);

    m_filters = spin(this, "filters", 1, 65536);
    m_filters->setToolTip(tr("Output channels. Multiples of 8 let fp16/bf16 convolutions run on "
                             "tensor cores."));
    m_form->addRow(tr("Filters"), m_filters);

    m_kernelH = spin(this, "kernelH", 1, k_maxWindow);
    m_kernelW = spin(this, "kernelW", 1, k_maxWindow);
    m_kernelH->setToolTip(tr("Height"));
    m_kernelW->setToolTip(tr("Width"));
    m_kernelRow = row(this, {m_kernelH, new QLabel(QStringLiteral("\u00d7"), this), m_kernelW});
    m_form->addRow(tr("Kernel"), m_kernelRow);

    m_strideH = spin(this, "strideH", 1, k_maxWindow);
    m_strideW = spin(this, "strideW", 1, k_maxWindow);
    m_strideRow = row(this, {m_strideH, new QLabel(QStringLiteral("\u00d7"), this), m_strideW});
    m_strideRow->setToolTip(tr("Step between windows (height x width). Convolutions default to "
                               "1, pooling to its window."));
    m_form->addRow(tr("Stride"), m_strideRow);

    m_padding = new QComboBox(this);
    m_padding->setObjectName(QStringLiteral("padding"));
    for (Padding p : {Padding::Valid, Padding::Same, Padding::Explicit})
        m_padding->addItem(fromView(mixlab::padding_name(p)), int(p));
    m_padding->setToolTip(tr("valid: none; same: (kernel-1)/2 zeros per side, odd kernels only "
                             "(the output is input/stride, rounded up); explicit: your numbers"));
    m_padH = spin(this, "padH", 0, k_maxWindow);
    m_padW = spin(this, "padW", 0, k_maxWindow);
    m_padH->setToolTip(tr("Zeros above and below"));
    m_padW->setToolTip(tr("Zeros left and right"));
    m_paddingRow = row(this, {m_padding, m_padH, m_padW});
    m_form->addRow(tr("Padding"), m_paddingRow);

    m_momentum = new QDoubleSpinBox(this);
    m_momentum->setObjectName(QStringLiteral("momentum"));
    m_momentum->setRange(0.0, 1.0);
    m_momentum->setDecimals(4);
    m_momentum->setSingleStep(0.01);
    m_momentum->setKeyboardTracking(false);
    m_momentum->setToolTip(tr("PyTorch's convention: running = (1 - momentum) x running + "
                              "momentum x batch statistic"));
    m_form->addRow(tr("Momentum"), m_momentum);

    m_epsilon = new QLineEdit(this);
    m_epsilon->setObjectName(QStringLiteral("epsilon"));
    auto *epsValidator = new QDoubleValidator(1e-12, 1.0, 12, m_epsilon);
    epsValidator->setNotation(QDoubleValidator::ScientificNotation);
    epsValidator->setLocale(QLocale::c());
    m_epsilon->setValidator(epsValidator);
    m_epsilon->setMaximumWidth(110);
    m_epsilon->setToolTip(tr("Added to the variance before the square root"));
    m_form->addRow(tr("Epsilon"), m_epsilon);

    m_activation = new QComboBox(this);
    m_activation->setObjectName(QStringLiteral("activation"));
    fillActivations(false);
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

    m_noFp8 = new QCheckBox(tr("keep out of fp8"), this);
    m_noFp8->setObjectName(QStringLiteral("noFp8"));
    m_noFp8->setToolTip(tr("Under mixed_fp8, run this dense layer's GEMMs in bfloat16 instead "
                           "of fp8 (\"dtype\": \"bfloat16\"); other policies ignore it. The "
                           "first and the last dense layer are the usual ones kept out: the "
                           "input's and the logits' ranges suffer most from fp8's 3 or 2 "
                           "mantissa bits."));
    m_form->addRow(QString(), m_noFp8);

    connect(m_units, &QSpinBox::valueChanged, this, [this](int v) {
        LayerSpec l = m_layer;
        l.units = v;
        edit(LayerField::Units, l);
    });
    connect(m_unitsPerClass, &QCheckBox::toggled, this, [this](bool on) {
        LayerSpec l = m_layer;
        l.units = on ? mixlab::k_units_classes : m_units->value();
        m_units->setEnabled(!on);
        if (on) {
            const QSignalBlocker block(m_unitsPerWord);
            m_unitsPerWord->setChecked(false);
        }
        edit(LayerField::UnitsPerClass, l);
    });
    connect(m_unitsPerWord, &QCheckBox::toggled, this, [this](bool on) {
        LayerSpec l = m_layer;
        l.units = on ? mixlab::k_units_vocab : m_units->value();
        m_units->setEnabled(!on);
        if (on) {
            const QSignalBlocker block(m_unitsPerClass);
            m_unitsPerClass->setChecked(false);
        }
        edit(LayerField::UnitsPerWord, l);
    });
    connect(m_tieWeights, &QCheckBox::toggled, this, [this](bool on) {
        LayerSpec l = m_layer;
        l.tie_weights = on;
        edit(LayerField::TieWeights, l);
    });
    connect(m_vocab, &QSpinBox::valueChanged, this, [this](int v) {
        LayerSpec l = m_layer;
        l.vocab = v;
        edit(LayerField::Vocab, l);
    });
    connect(m_vocabFromData, &QCheckBox::toggled, this, [this](bool on) {
        LayerSpec l = m_layer;
        l.vocab = on ? mixlab::k_vocab_dataset : m_vocab->value();
        m_vocab->setEnabled(!on);
        edit(LayerField::Vocab, l);
    });
    connect(m_dim, &QSpinBox::valueChanged, this, [this](int v) {
        LayerSpec l = m_layer;
        l.dim = v;
        edit(LayerField::Dim, l);
    });
    connect(m_hidden, &QSpinBox::valueChanged, this, [this](int v) {
        LayerSpec l = m_layer;
        l.hidden = v;
        edit(LayerField::Hidden, l);
    });
    connect(m_numLayers, &QSpinBox::valueChanged, this, [this](int v) {
        LayerSpec l = m_layer;
        l.num_layers = v;
        edit(LayerField::NumLayers, l);
    });
    connect(m_filters, &QSpinBox::valueChanged, this, [this](int v) {
        LayerSpec l = m_layer;
        l.filters = v;
        edit(LayerField::Filters, l);
    });
    auto kernelEdited = [this] {
        LayerSpec l = m_layer;
        l.kernel_h = m_kernelH->value();
        l.kernel_w = m_kernelW->value();
        edit(LayerField::Kernel, l);
    };
    connect(m_kernelH, &QSpinBox::valueChanged, this, kernelEdited);
    connect(m_kernelW, &QSpinBox::valueChanged, this, kernelEdited);
    connect(m_strideH, &QSpinBox::valueChanged, this, [this] { editStride(); });
    connect(m_strideW, &QSpinBox::valueChanged, this, [this] { editStride(); });
    connect(m_padding, &QComboBox::currentIndexChanged, this, [this](int i) {
        LayerSpec l = m_layer;
        l.padding = Padding(m_padding->itemData(i).toInt());
        if (l.padding == Padding::Explicit) {
            // Start from what "same" would give, the usual reason to go explicit.
            l.pad_h = std::max(0, (l.kernel_h - 1) / 2);
            l.pad_w = std::max(0, (l.kernel_w - 1) / 2);
        } else {
            l.pad_h = l.pad_w = 0; // numbers belong to explicit padding only
        }
        edit(LayerField::Padding, l);
    });
    auto padEdited = [this] {
        LayerSpec l = m_layer;
        l.pad_h = m_padH->value();
        l.pad_w = m_padW->value();
        edit(LayerField::PadSize, l);
    };
    connect(m_padH, &QSpinBox::valueChanged, this, padEdited);
    connect(m_padW, &QSpinBox::valueChanged, this, padEdited);
    connect(m_momentum, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        LayerSpec l = m_layer;
        l.momentum = float(v);
        edit(LayerField::Momentum, l);
    });
    connect(m_epsilon, &QLineEdit::editingFinished, this, [this] {
        bool ok = false;
        const double v = QLocale::c().toDouble(m_epsilon->text(), &ok);
        if (!ok || !(v > 0.0)) return;
        LayerSpec l = m_layer;
        l.epsilon = float(v);
        if (l.epsilon != m_layer.epsilon) edit(LayerField::Epsilon, l);
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
        if (on) l.no_fp8 = false; // one "dtype" field holds either
        edit(LayerField::ForceFp32, l);
    });
    connect(m_noFp8, &QCheckBox::toggled, this, [this](bool on) {
        LayerSpec l = m_layer;
        l.no_fp8 = on;
        if (on) l.force_fp32 = false;
        edit(LayerField::NoFp8, l);
    });

    clearLayer();
}

void LayerPropertyEditor::fillActivations(bool residual)
{
    m_activation->clear();
    for (Activation a : k_activations) {
        // A block adds its two paths and may rectify the sum; nothing else is offered.
        if (residual && a != Activation::None && a != Activation::Relu) continue;
        m_activation->addItem(fromView(mixlab::activation_name(a)), int(a));
    }
}

void LayerPropertyEditor::editStride()
{
    LayerSpec l = m_layer;
    l.stride_h = m_strideH->value();
    l.stride_w = m_strideW->value();
    // Back at the type's default: written as no stride at all, so the window and stride
    // of a pooling layer keep moving together.
    if (std::make_pair(l.stride_h, l.stride_w) == defaultStride(l)) l.stride_h = l.stride_w = 0;
    edit(LayerField::Stride, l);
}

void LayerPropertyEditor::setLayer(const LayerPath &path, const LayerSpec &layer)
{
    m_path = path;
    m_layer = layer;
    const QSignalBlocker b1(m_units), b2(m_activation), b3(m_useBias), b4(m_rate), b5(m_forceFp32),
        b6(m_unitsPerClass), b7(m_filters), b8(m_kernelH), b9(m_kernelW), b10(m_strideH),
        b11(m_strideW), b12(m_padding), b13(m_padH), b14(m_padW), b15(m_momentum), b16(m_epsilon),
        b17(m_unitsPerWord), b18(m_tieWeights), b19(m_vocab), b20(m_vocabFromData), b21(m_dim),
        b22(m_hidden), b23(m_numLayers), b24(m_noFp8);
    QString title = path.toString();
    if (!title.isEmpty()) title[0] = title[0].toUpper();
    m_title->setText(tr("%1: %2").arg(title, fromView(mixlab::layer_type_name(layer.type))));

    const LayerType t = layer.type;
    if (t == LayerType::Dense) {
        const bool perClass = layer.units == mixlab::k_units_classes;
        const bool perWord = layer.units == mixlab::k_units_vocab;
        m_unitsPerClass->setChecked(perClass);
        m_unitsPerWord->setChecked(perWord);
        m_units->setEnabled(!perClass && !perWord);
        // Per class or word: the count it stands for, not whatever the field held before.
        if (!perClass && !perWord)
            m_units->setValue(layer.units);
        else if (m_datasetClasses > 0)
            m_units->setValue(m_datasetClasses);
        m_tieWeights->setChecked(layer.tie_weights);
    }
    if (t == LayerType::Embedding) {
        const bool fromData = layer.vocab == mixlab::k_vocab_dataset;
        m_vocabFromData->setChecked(fromData);
        m_vocab->setEnabled(!fromData);
        if (!fromData)
            m_vocab->setValue(layer.vocab);
        else if (m_datasetClasses > 0)
            m_vocab->setValue(m_datasetClasses);
        m_dim->setValue(layer.dim);
    }
    if (t == LayerType::Lstm) {
        m_hidden->setValue(layer.hidden);
        m_numLayers->setValue(layer.num_layers);
    }
    if (t == LayerType::Conv2D) m_filters->setValue(layer.filters);
    if (isWindowed(t)) {
        m_kernelH->setValue(layer.kernel_h);
        m_kernelW->setValue(layer.kernel_w);
        const auto [dh, dw] = defaultStride(layer);
        m_strideH->setValue(layer.stride_h > 0 ? layer.stride_h : dh);
        m_strideW->setValue(layer.stride_w > 0 ? layer.stride_w : dw);
        m_padding->setCurrentIndex(m_padding->findData(int(layer.padding)));
        m_padH->setValue(layer.pad_h);
        m_padW->setValue(layer.pad_w);
        if (QWidget *label = m_form->labelForField(m_kernelRow))
            static_cast<QLabel *>(label)->setText(isPool(t) ? tr("Pool size") : tr("Kernel"));
    }
    m_momentum->setValue(double(layer.momentum));
    m_epsilon->setText(QString::number(double(layer.epsilon), 'g', 6));
    fillActivations(t == LayerType::Residual);
    m_activation->setCurrentIndex(m_activation->findData(int(layer.activation)));
    m_useBias->setChecked(layer.use_bias);
    m_rate->setValue(double(layer.rate));
    m_forceFp32->setChecked(layer.force_fp32);
    m_noFp8->setChecked(layer.no_fp8);

    QString note;
    if (t == LayerType::Residual)
        note = tr("Output = %1(body + shortcut). Body: %2 layers; shortcut: %3.")
                   .arg(layer.activation == Activation::Relu ? QStringLiteral("relu") : QString())
                   .arg(layer.body.size())
                   .arg(layer.shortcut.empty() ? tr("identity")
                                               : tr("%1 layers").arg(layer.shortcut.size()));
    m_note->setText(note);
    showRows();
}

void LayerPropertyEditor::showGroup(const LayerPath &groupPath, const LayerSpec &block)
{
    m_path = {};
    m_layer = LayerSpec{};
    QString owner = groupPath.owner().toString();
    if (!owner.isEmpty()) owner[0] = owner[0].toUpper();
    const bool body = groupPath.group() == LayerGroup::Body;
    m_title->setText(tr("%1: %2").arg(owner, layerGroupName(groupPath.group())));
    const std::size_t n = body ? block.body.size() : block.shortcut.size();
    if (body)
        m_note->setText(tr("%1 layers. Layers added from the palette now go at the end of the "
                           "body.")
                            .arg(n));
    else if (n == 0)
        m_note->setText(tr("The identity: the block's input is added as it is. Add a 1x1 "
                           "convolution and batch norm here when the body changes the "
                           "stride or the channels."));
    else
        m_note->setText(tr("%1 layers. Layers added from the palette now go at the end of the "
                           "shortcut.")
                            .arg(n));
    showRows();
}

void LayerPropertyEditor::clearLayer()
{
    m_path = {};
    m_layer = LayerSpec{};
    m_title->setText(tr("No layer selected"));
    m_note->clear();
    showRows();
}

void LayerPropertyEditor::showRows()
{
    const bool any = !m_path.isEmpty();
    const LayerType t = m_layer.type;
    m_note->setVisible(!m_note->text().isEmpty());
    m_form->setRowVisible(m_unitsRow, any && t == LayerType::Dense);
    m_form->setRowVisible(m_filters, any && t == LayerType::Conv2D);
    m_form->setRowVisible(m_kernelRow, any && isWindowed(t));
    m_form->setRowVisible(m_strideRow, any && isWindowed(t));
    m_form->setRowVisible(m_paddingRow, any && isWindowed(t));
    const bool explicitPad = m_layer.padding == Padding::Explicit;
    m_padH->setVisible(explicitPad);
    m_padW->setVisible(explicitPad);
    m_form->setRowVisible(m_momentum, any && t == LayerType::BatchNorm);
    m_form->setRowVisible(m_epsilon, any && t == LayerType::BatchNorm);
    m_form->setRowVisible(m_activation,
                          any && (t == LayerType::Dense || t == LayerType::Conv2D ||
                                  t == LayerType::Activation || t == LayerType::Residual));
    m_form->setRowVisible(m_useBias, any && (t == LayerType::Dense || t == LayerType::Conv2D));
    m_form->setRowVisible(m_tieWeights, any && t == LayerType::Dense);
    m_form->setRowVisible(m_vocabRow, any && t == LayerType::Embedding);
    m_form->setRowVisible(m_dim, any && t == LayerType::Embedding);
    m_form->setRowVisible(m_hidden, any && t == LayerType::Lstm);
    m_form->setRowVisible(m_numLayers, any && t == LayerType::Lstm);
    m_form->setRowVisible(m_rate, any && (t == LayerType::Dropout || t == LayerType::Lstm));
    if (auto *label = static_cast<QLabel *>(m_form->labelForField(m_rate)))
        label->setText(t == LayerType::Lstm ? tr("Dropout") : tr("Rate"));
    m_rate->setToolTip(t == LayerType::Lstm
                           ? tr("Fraction of each LSTM layer's outputs zeroed in training before "
                                "the next layer reads them (not after the last one)")
                           : tr("Fraction of the inputs zeroed in training."));
    m_form->setRowVisible(m_forceFp32, any && t != LayerType::Residual);
    m_form->setRowVisible(m_noFp8, any && t == LayerType::Dense);
    switch (t) {
    case LayerType::Dense:
    case LayerType::Conv2D:
        m_activation->setToolTip(tr("Applied to the layer's output (fused into its GEMM where "
                                    "the backend can)."));
        break;
    case LayerType::Residual:
        m_activation->setToolTip(tr("Applied to body + shortcut (relu in the ResNets)."));
        break;
    default: m_activation->setToolTip(tr("The function applied element-wise.")); break;
    }
}

void LayerPropertyEditor::edit(LayerField field, const LayerSpec &after)
{
    if (m_path.isEmpty()) return;
    const LayerSpec before = m_layer;
    m_layer = after;
    // The padding numbers appear with "explicit" at once, before the designer answers.
    if (field == LayerField::Padding) showRows();
    emit layerEdited(m_path, field, before, after);
}
