// WheelGuard: Qt::StrongFocus (a click or Tab gives the focus, the wheel does not) and a
// wheel that reaches an unfocused combo or spin box goes on to its scroll area.
#include "common/wheelguard.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QPointer>
#include <QWheelEvent>

namespace {

bool guarded(const QObject *o)
{
    return qobject_cast<const QComboBox *>(o) || qobject_cast<const QAbstractSpinBox *>(o);
}

// Only Qt's default: a widget given another focus policy on purpose keeps it.
void takeFocusOnlyByClickOrTab(QWidget *w)
{
    if (w->focusPolicy() == Qt::WheelFocus) w->setFocusPolicy(Qt::StrongFocus);
}

} // namespace

WheelGuard::WheelGuard(QObject *parent) : QObject(parent) {}

void WheelGuard::install()
{
    // The one guard, a child of the application: it goes with the application, and the
    // pointer with it.
    static QPointer<WheelGuard> installed;
    QCoreApplication *app = QCoreApplication::instance();
    if (!app || installed) return;
    installed = new WheelGuard(app);
    app->installEventFilter(installed);
    // Widgets made before the guard are polished already: they get no Polish event.
    for (QWidget *w : QApplication::allWidgets())
        if (guarded(w)) takeFocusOnlyByClickOrTab(w);
}

bool WheelGuard::eventFilter(QObject *watched, QEvent *event)
{
    if (event->type() == QEvent::Polish && guarded(watched)) {
        takeFocusOnlyByClickOrTab(static_cast<QWidget *>(watched));
        return false;
    }
    if (event->type() != QEvent::Wheel || !guarded(watched)) return false;
    auto *widget = static_cast<QWidget *>(watched);
    if (widget->hasFocus()) return false;
    passOutward(widget, *static_cast<QWheelEvent *>(event));
    event->accept(); // handled here: Qt must not hand it on a second time
    return true;
}

void WheelGuard::passOutward(QWidget *from, const QWheelEvent &event)
{
    QPointF position = event.position();
    for (QWidget *w = from; !w->isWindow() && w->parentWidget();) {
        position = w->mapToParent(position);
        w = w->parentWidget();
        QWheelEvent moved(position, event.globalPosition(), event.pixelDelta(), event.angleDelta(),
                          event.buttons(), event.modifiers(), event.phase(), event.inverted(),
                          event.source());
        moved.ignore();
        QCoreApplication::sendEvent(w, &moved);
        if (moved.isAccepted()) return;
    }
}
