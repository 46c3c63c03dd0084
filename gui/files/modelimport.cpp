// File > Import model's reader: picks MixLab's model reader or the Keras importer for a
// file, and says in one line what a Keras import brought in.
#include "files/modelimport.h"

#include "common/enginetext.h"

#include "mixlab/keras_import.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringList>

#include <exception>

namespace {

// Keras's JSON never has MixLab's "format" key, and a MixLab model always has one; a
// `.keras` archive is Keras's whatever it holds (the importer says when it is damaged).
// A file that is not JSON at all goes to MixLab's reader, as it always did: both readers
// say "not valid JSON" in the same words.
bool isKerasFile(const QString &path)
{
    if (QFileInfo(path).suffix().compare(QLatin1String("keras"), Qt::CaseInsensitive) == 0)
        return true;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return false; // MixLab's reader names the reason
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll());
    return doc.isObject() && !doc.object().contains(QLatin1String("format"));
}

QString shapeText(const std::vector<int> &shape)
{
    QStringList parts;
    for (int d : shape) parts << QString::number(d);
    return parts.join(QLatin1Char('x'));
}

} // namespace

std::optional<ImportedModel> readModelFile(const QString &path, QString *error)
{
    const auto failWith = [error](const QString &text) -> std::optional<ImportedModel> {
        if (error) *error = text;
        return std::nullopt;
    };
    if (QFileInfo(path).isDir())
        return failWith(QStringLiteral("'%1' is a folder, not a model file").arg(path));
    const std::string file = QFile::encodeName(path).toStdString();
    ImportedModel out;
    try {
        if (isKerasFile(path)) {
            const mixlab::KerasImport k = mixlab::load_keras_model(file);
            out.spec = k.spec;
            out.keras = true;
            out.policy = k.policy;
            out.kerasPolicy = QString::fromStdString(k.keras_policy);
            out.modelClass = QString::fromStdString(k.model_class);
            out.kerasMajor = k.keras_major;
            out.inputShape = k.input_shape;
        } else {
            out.spec = mixlab::load_model_spec(file);
        }
    } catch (const std::exception &e) {
        return failWith(QString::fromUtf8(e.what()));
    }
    return out;
}

QString importSummary(const ImportedModel &model, const QString &path)
{
    const QString name = model.spec.name.empty() ? QFileInfo(path).fileName()
                                                 : QString::fromStdString(model.spec.name);
    if (!model.keras)
        return QStringLiteral("Imported the model %1 (%2 layers) from %3")
            .arg(name)
            .arg(model.spec.layers.size())
            .arg(path);
    // One line the status bar holds at 1280 pixels: the class, the size, the policy as
    // Keras named it and as MixLab does, and the input shape to choose data for.
    QString text = QStringLiteral("Imported %1 from Keras %2: %3, %4 layers, Keras policy %5 "
                                  "\u2192 %6")
                       .arg(name)
                       .arg(model.kerasMajor)
                       .arg(model.modelClass)
                       .arg(model.spec.layers.size())
                       .arg(model.kerasPolicy, policyText(model.policy));
    text += model.inputShape.empty()
                ? QStringLiteral(", no input shape in the file")
                : QStringLiteral(", input %1").arg(shapeText(model.inputShape));
    return text;
}
