// GuideDialog: a QTextBrowser on the resource page; links stay inside the app.
#include "app/guidedialog.h"

#include <QDialogButtonBox>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

GuideDialog::GuideDialog(QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("MixLab documentation"));
    m_browser = new QTextBrowser(this);
    m_browser->setObjectName("guideBrowser");
    m_browser->setOpenExternalLinks(false);
    m_browser->setSource(QUrl(QString::fromLatin1(k_guideUrl)));
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_browser);
    layout->addWidget(buttons);
    resize(720, 760);
}

QString GuideDialog::text() const { return m_browser->toPlainText(); }
