#ifndef CWebSockets_SHIM_H
#define CWebSockets_SHIM_H
#include <libwebsockets.h>

/* Macros and bit flags that Swift cannot import directly. */

/** Bytes lws needs in front of every lws_write() payload (the LWS_PRE macro). */
static inline size_t cws_pre(void) { return LWS_PRE; }

/** Context options for a server that creates its one vhost explicitly and validates UTF-8 text frames. */
static inline uint64_t cws_server_options(int disable_ipv6) {
    uint64_t options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_VALIDATE_UTF8;
    if (disable_ipv6) options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    return options;
}

/** Warnings and errors only. */
static inline int cws_log_levels(void) { return LLL_ERR | LLL_WARN; }

#endif
