#ifndef CWebSockets_SHIM_H
#define CWebSockets_SHIM_H
#include <libwebsockets.h>
#include <dlfcn.h>
#include <stddef.h>

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

/*
 * An epoll event loop for lws through its libev event-lib plugin (Debian's
 * libwebsockets-evlib-ev, which brings libev4). libev is opened at run time, not linked,
 * so a host without it still runs (on lws's poll() loop).
 */

/** The lws context option that selects the libev plugin. */
static inline uint64_t cws_option_libev(void) { return LWS_SERVER_OPTION_LIBEV; }

typedef struct cws_ev {
    void *(*loop_new)(unsigned int flags);
    int (*run)(void *loop, int flags);
    void (*loop_destroy)(void *loop);
} cws_ev;

/** Resolves libev's loop functions; 0 on success, -1 if libev is not installed. */
static inline int cws_ev_open(cws_ev *ev) {
    void *lib = dlopen("libev.so.4", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) return -1;
    ev->loop_new = (void *(*)(unsigned int))dlsym(lib, "ev_loop_new");
    ev->run = (int (*)(void *, int))dlsym(lib, "ev_run");
    ev->loop_destroy = (void (*)(void *))dlsym(lib, "ev_loop_destroy");
    return ev->loop_new && ev->run && ev->loop_destroy ? 0 : -1;
}

/** A new libev loop on the epoll backend (EVBACKEND_EPOLL, ignoring LIBEV_FLAGS: EVFLAG_NOENV), or NULL. */
static inline void *cws_ev_loop_new_epoll(const cws_ev *ev) { return ev->loop_new(0x00000004U | 0x01000000U); }

/** One iteration: waits for at least one event and handles what is ready (EVRUN_ONCE). */
static inline int cws_ev_run_once(const cws_ev *ev, void *loop) { return ev->run(loop, 2); }

/** True if a plugin file for this event lib is where lws looks for it. */
static inline int cws_evlib_plugin_present(void) {
    void *plugin = dlopen(LWS_INSTALL_LIBDIR "/libwebsockets-evlib_ev.so", RTLD_LAZY | RTLD_LOCAL);
    if (!plugin) return 0;
    dlclose(plugin);
    return 1;
}

#endif
