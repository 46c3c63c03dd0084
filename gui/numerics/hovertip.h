// The hover text of the dock's painted widgets (heatmap, shares chart): a tooltip event
// answered with the text for the pointer's position, or the tooltip hidden where there is
// none, so both widgets answer hover the same way.
#pragma once
#include <QEvent>
#include <QHelpEvent>
#include <QToolTip>
#include <QWidget>

// True when `event` was a tooltip request (answered here); `textAt` gives the text for a
// position in `widget`, empty for none.
template <class TextAt>
bool answerHover(QWidget *widget, QEvent *event, const TextAt &textAt)
{
    if (event->type() != QEvent::ToolTip) return false;
    auto *help = static_cast<QHelpEvent *>(event);
    const QString text = textAt(help->pos());
    if (text.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(help->globalPos(), text, widget);
    return true;
}
