#ifndef CRdKafka_SHIM_H
#define CRdKafka_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#endif
