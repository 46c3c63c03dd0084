// GuideDialog: Help > MixLab documentation, the quick guide (the parts of the window, the
// precision policies, comparing, what Why? shows) built into the app as a resource, so it
// reads the same offline and always matches the version running.
#pragma once
#include <QDialog>

class QTextBrowser;

class GuideDialog : public QDialog {
    Q_OBJECT
public:
    explicit GuideDialog(QWidget *parent = nullptr);
    // The page as plain text (tests).
    QString text() const;

    static constexpr const char *k_guideUrl = "qrc:/docs/guide.html";

private:
    QTextBrowser *m_browser = nullptr;
};
