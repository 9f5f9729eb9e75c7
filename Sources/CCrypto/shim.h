// Digests from OpenSSL's libcrypto (already in the process: libcurl and libssh2 link it).
#ifndef TETHER_CCRYPTO_SHIM_H
#define TETHER_CCRYPTO_SHIM_H

#include <openssl/evp.h>
#include <stddef.h>

/// SHA-1 of `length` bytes into `digest` (20 bytes); 1 on success.
static inline int tether_sha1(const void *bytes, size_t length, unsigned char *digest) {
    unsigned int size = 0;
    return EVP_Digest(bytes, length, digest, &size, EVP_sha1(), NULL) == 1 && size == 20;
}

/// SHA-256 of `length` bytes into `digest` (32 bytes); 1 on success.
static inline int tether_sha256(const void *bytes, size_t length, unsigned char *digest) {
    unsigned int size = 0;
    return EVP_Digest(bytes, length, digest, &size, EVP_sha256(), NULL) == 1 && size == 32;
}

#endif
