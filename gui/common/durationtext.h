// How long something took or will take, as the runs table and report dialogs say it:
// "42s", "3m 05s", "2h 07m".
#pragma once
#include <QString>

QString durationText(double seconds);
