#ifndef COpenSSL_SHIM_H
#define COpenSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

/* EVP_PKEY_PUBLIC_KEY is an expression over other macros, which Swift does not import:
   the selection that EVP_PKEY_fromdata needs to build a public key (parameters and point). */
static inline int backbone_evp_pkey_public_key_selection(void) {
    return EVP_PKEY_PUBLIC_KEY;
}

/* Parameter names and the curve name as pointers to static strings: OSSL_PARAM_BLD keeps the
   name's pointer (not a copy) in the parameters it builds, and the value's until
   OSSL_PARAM_BLD_to_param, so the temporary C string Swift passes for a String would dangle. */
static inline const char *backbone_param_group_name(void) { return OSSL_PKEY_PARAM_GROUP_NAME; }
static inline const char *backbone_param_public_key(void) { return OSSL_PKEY_PARAM_PUB_KEY; }
static inline const char *backbone_param_rsa_n(void) { return OSSL_PKEY_PARAM_RSA_N; }
static inline const char *backbone_param_rsa_e(void) { return OSSL_PKEY_PARAM_RSA_E; }
static inline const char *backbone_curve_p256(void) { return SN_X9_62_prime256v1; }
#endif
