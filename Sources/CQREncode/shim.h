// libqrencode (Debian's libqrencode-dev): the QR code `tether pair` prints on the terminal.
#ifndef TETHER_CQRENCODE_SHIM_H
#define TETHER_CQRENCODE_SHIM_H

#include <qrencode.h>

#endif
