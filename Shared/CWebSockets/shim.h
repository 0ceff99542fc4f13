#ifndef CWebSockets_SHIM_H
#define CWebSockets_SHIM_H
#include <libwebsockets.h>
#endif
