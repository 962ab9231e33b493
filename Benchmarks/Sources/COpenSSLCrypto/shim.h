// The system OpenSSL's libcrypto (Debian: libssl-dev), for VerifyBenchmarks' OpenSSL baseline.
#include <openssl/evp.h>
#include <openssl/x509.h>
