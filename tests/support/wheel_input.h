// The mouse wheel over a settings field, as the window suites send it, and what the field
// shows (a combo's text, a spin box's text) to see whether the wheel changed it.
#pragma once
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QWheelEvent>

// One notch down over the middle of `field`.
inline void wheelDownOver(QWidget* field)
{
    const QPointF centre = QRectF(field->rect()).center();
    QWheelEvent wheel(centre, field->mapToGlobal(centre), QPoint(), QPoint(0, -120), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(field, &wheel);
}

inline QString shownValue(const QWidget* field)
{
    if (const auto* combo = qobject_cast<const QComboBox*>(field)) return combo->currentText();
    const auto* spin = qobject_cast<const QAbstractSpinBox*>(field);
    return spin ? spin->text() : QString();
}
