#ifndef CLibPQ_SHIM_H
#define CLibPQ_SHIM_H
#include <libpq-fe.h>
#endif
