#include "tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <stdexcept>

#include "http_connection.h"

namespace hotkey::coordinator {
namespace {

std::string openssl_error() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

}  // namespace

std::unique_ptr<httplib::Server> make_server(const CoordinatorConfig& c) {
  if (!c.tls()) return std::make_unique<BoundedServer>();
  std::string error;
  auto setup = [&c, &error](SSL_CTX& ctx) {
    ERR_clear_error();
    SSL_CTX_set_options(&ctx,
                        SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, c.tls_cert_file.c_str()) != 1) {
      error = "tls_cert_file '" + c.tls_cert_file +
              "' is not a usable PEM certificate chain: " + openssl_error();
      return false;
    }
    if (SSL_CTX_use_PrivateKey_file(&ctx, c.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
        error = "tls_key_file '" + c.tls_key_file + "' does not match the certificate in '" +
                c.tls_cert_file + "'";
        ERR_clear_error();
        return false;
      }
      error = "tls_key_file '" + c.tls_key_file +
              "' is not a usable PEM private key (encrypted keys are not "
              "supported): " +
              openssl_error();
      return false;
    }
    if (SSL_CTX_check_private_key(&ctx) != 1) {
      error = "tls_key_file '" + c.tls_key_file + "' does not match the certificate in '" +
              c.tls_cert_file + "': " + openssl_error();
      return false;
    }
    if (!c.tls_client_ca_file.empty()) {
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.tls_client_ca_file.c_str());
      if (names == nullptr ||
          SSL_CTX_load_verify_locations(&ctx, c.tls_client_ca_file.c_str(), nullptr) != 1) {
        if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
        error = "tls_client_ca_file '" + c.tls_client_ca_file +
                "' holds no usable PEM CA certificate: " + openssl_error();
        return false;
      }
      SSL_CTX_set_client_CA_list(&ctx, names);
      SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    return true;
  };
  auto server = std::make_unique<BoundedSslServer>(setup);
  if (!server->is_valid()) {
    throw std::invalid_argument(error.empty() ? "TLS setup failed: " + openssl_error() : error);
  }
  return server;
}

}  // namespace hotkey::coordinator
