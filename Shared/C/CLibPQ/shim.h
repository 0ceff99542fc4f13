#ifndef CLibPQ_SHIM_H
#define CLibPQ_SHIM_H
#include <libpq-fe.h>
#include <postgres_ext.h>
/* SocketReadiness waits for libpq sockets with epoll (not in Swift's Glibc module). */
#include <sys/epoll.h>

/* PG_DIAG_* are character macros; these helpers keep them out of Swift. */
static inline const char *backbone_pq_sqlstate(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}

static inline const char *backbone_pq_primary_message(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
}

static inline const char *backbone_pq_severity(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SEVERITY_NONLOCALIZED);
}

static inline int backbone_pq_connection_ok(const PGconn *conn) {
    return conn != NULL && PQstatus(conn) == CONNECTION_OK;
}

static inline int backbone_pq_transaction_idle(const PGconn *conn) {
    return conn != NULL && PQtransactionStatus(conn) == PQTRANS_IDLE;
}
#endif
