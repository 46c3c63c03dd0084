// WheelGuard: combo boxes and spin boxes take the mouse wheel only while they have the
// focus; otherwise the wheel scrolls whatever holds them. Without it, scrolling the run
// panel past the Device field turned "auto" into "cpu" and Batch 128 into 129.
// One application-wide event filter, so every combo and spin box of the app (run panel,
// property editor, dialogs, those made later) behaves the same.
#pragma once
#include <QObject>

class QWheelEvent;
class QWidget;

class WheelGuard : public QObject {
    Q_OBJECT
public:
    // Installs the guard on the application once; later calls do nothing.
    static void install();

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    explicit WheelGuard(QObject *parent);
    // Offers the wheel to the widgets around `from`, innermost first, as Qt does with a
    // wheel its target ignores (a sent event, as from a test, would not travel on).
    static void passOutward(QWidget *from, const QWheelEvent &event);
};
