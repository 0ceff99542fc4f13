#ifndef CYAJL_SHIM_H
#define CYAJL_SHIM_H
#include <yajl/yajl_parse.h>
#endif
