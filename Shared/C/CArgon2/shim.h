#ifndef CArgon2_SHIM_H
#define CArgon2_SHIM_H
#include <argon2.h>
#endif
