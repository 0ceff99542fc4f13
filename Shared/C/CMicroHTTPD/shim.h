#ifndef CMicroHTTPD_SHIM_H
#define CMicroHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdarg.h>
#include <microhttpd.h>

/* Swift cannot call C variadic functions; these wrappers pass the options the
 * HTTPServer module uses as plain parameters. */

/* Starts a daemon bound to `address` (a sockaddr_in or sockaddr_in6, matching
 * MHD_USE_IPv6 in `flags`). Returns NULL on failure (errno is set by MHD when
 * the failure came from the OS, e.g. EADDRINUSE). */
/* The initial request context (`*req_cls`) of a request whose path holds an escaped NUL:
   libmicrohttpd unescapes the path into a C string, which the NUL cuts short, so
   `PUT /materials/a%00b` would reach the handler as `/materials/a`. The URI log callback sees
   the URI before unescaping and marks such a request; the access handler refuses it. */
#define ZX_MHD_NUL_PATH_MARKER ((void *)(uintptr_t)1)

static inline void *zx_mhd_uri_log(void *cls, const char *uri, struct MHD_Connection *connection)
{
    (void)cls;
    (void)connection;
    for (const char *p = uri; p != NULL && *p != '\0' && *p != '?'; p++) {
        if (p[0] == '%' && p[1] == '0' && p[2] == '0') return ZX_MHD_NUL_PATH_MARKER;
    }
    return NULL;
}

static inline struct MHD_Daemon *zx_mhd_start_daemon(
    unsigned int flags,
    const struct sockaddr *address,
    MHD_AccessHandlerCallback access_handler, void *access_handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_LogCallback logger, void *logger_cls,
    unsigned int connection_limit,
    unsigned int connection_timeout_seconds,
    size_t connection_memory_limit)
{
    return MHD_start_daemon(flags, 0, NULL, NULL,
                            access_handler, access_handler_cls,
                            MHD_OPTION_EXTERNAL_LOGGER, logger, logger_cls, /* first, so every message goes to it */
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_URI_LOG_CALLBACK, zx_mhd_uri_log, NULL,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
                            MHD_OPTION_END);
}

/* The port the daemon is listening on (useful after binding port 0); 0 if unknown. */
static inline uint16_t zx_mhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/* The peer address of a connection, or NULL. Valid while the connection is. */
static inline const struct sockaddr *zx_mhd_client_address(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

#endif
