//! Outbound HTTPS for every Kosha binary: one TLS trust policy, one reqwest client.
//!
//! Trusted roots are Mozilla's root program, compiled in, not the host's certificate store:
//! `webpki-roots` (already parsed trust anchors, for rustls) and `webpki-root-certs` (the same
//! certificates whole, for the AWS SDK, which takes PEM), pinned to the same release.
//! Reading the store costs a cold start a file per root: on a Debian host one native store
//! cost 6.8 ms of CPU, and the gateway read two (the AWS SDK's and reqwest's; issue 6,
//! commit 859524c and its predecessors in docs/benchmarks.md's history). Every endpoint
//! Kosha calls — AWS APIs, Lambda Function URLs, Cognito's JWKS, public embeddings APIs —
//! chains to a root in that program. A private CA is not supported for HTTPS.
//!
//! - [`http_client`]: a reqwest client on one rustls configuration (aws-lc-rs, TLS 1.2 and
//!   1.3, ALPN h2 then http/1.1), for every HTTP dependency of a process.
//! - [`sdk_http_client`]: the AWS SDK's HTTP client on the same roots ([`crate::aws`]).
//! - [`config_builder`], [`mozilla_roots`], [`crypto_provider`]: the policy's pieces, for a
//!   client that is not HTTP (core-api's PostgreSQL connector, which trusts a CA from
//!   configuration because RDS's CA is not in Mozilla's program).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::{
    RuntimeComponents, RuntimeComponentsBuilder,
};
use aws_smithy_runtime_api::shared::IntoShared;
use aws_smithy_types::config_bag::ConfigBag;
use base64::Engine as _;

/// Connect timeout of [`http_client`]: a TCP + TLS handshake to a healthy endpoint in the same
/// region takes a few ms; one that takes a second is treated as unreachable.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Idle keep-alive connections are closed after this long (below the 60 s idle timeout of
/// Lambda Function URLs and ALBs, so a pooled connection is not reset under a request).
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

static PROVIDER: LazyLock<Arc<rustls::crypto::CryptoProvider>> =
    LazyLock::new(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));

static CLIENT_CONFIG: LazyLock<rustls::ClientConfig> = LazyLock::new(|| {
    let mut config = config_builder()
        .with_root_certificates(mozilla_roots())
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config
});

/// The policy's crypto provider (aws-lc-rs), shared by every rustls configuration of a process.
pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::clone(&PROVIDER)
}

/// A rustls client builder on the policy: [`crypto_provider`], TLS 1.2 and 1.3. The caller
/// picks the certificate verifier (the HTTPS client: [`mozilla_roots`]; PostgreSQL: a CA from
/// configuration, crates/pg/src/tls.rs) and ALPN.
pub fn config_builder() -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier> {
    rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()
        // The aws-lc-rs provider supports the safe default versions; a failure here is a build
        // misconfiguration, seen on the first start of any test.
        .unwrap_or_else(|e| unreachable!("aws-lc-rs supports TLS 1.2 and 1.3: {e}"))
}

/// Mozilla's roots as a rustls trust store (compiled in; nothing is read).
pub fn mozilla_roots() -> rustls::RootCertStore {
    rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    }
}

/// A reqwest client on the process's rustls configuration (built on first use; nothing is read
/// or parsed: the trust anchors are compiled in): [`CONNECT_TIMEOUT`], [`POOL_IDLE_TIMEOUT`], no total
/// timeout (callers set one per request from their deadline). Share one per process: clones
/// share the connection pool.
///
/// # Errors
/// When reqwest cannot build its connector (not expected with a prebuilt rustls config).
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .tls_backend_preconfigured(CLIENT_CONFIG.clone())
        .connect_timeout(CONNECT_TIMEOUT)
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .build()
}

/// The AWS SDK's HTTP client (hyper + rustls, aws-lc-rs) trusting the same roots instead of
/// the host's store. The SDK takes its roots as PEM, so the compiled-in certificates are
/// encoded, and the SDK parses them, when the first SDK client is built — not at start-up
/// ([`LazySdkHttpClient`]).
pub fn sdk_http_client() -> SharedHttpClient {
    LazySdkHttpClient::default().into_shared()
}

/// The SDK's HTTP client, built when an SDK client first asks for it.
#[derive(Debug, Default)]
struct LazySdkHttpClient(OnceLock<SharedHttpClient>);

impl LazySdkHttpClient {
    fn inner(&self) -> &SharedHttpClient {
        self.0.get_or_init(build_sdk_http_client)
    }
}

impl HttpClient for LazySdkHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        self.inner().http_connector(settings, components)
    }

    fn validate_base_client_config(
        &self,
        components: &RuntimeComponentsBuilder,
        cfg: &ConfigBag,
    ) -> Result<(), BoxError> {
        self.inner().validate_base_client_config(components, cfg)
    }

    fn validate_final_config(
        &self,
        components: &RuntimeComponents,
        cfg: &ConfigBag,
    ) -> Result<(), BoxError> {
        self.inner().validate_final_config(components, cfg)
    }

    fn connector_metadata(
        &self,
    ) -> Option<aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata> {
        self.inner().connector_metadata()
    }
}

/// How many times this process has built the AWS SDK's HTTP client ([`sdk_http_client`]):
/// 0 until an SDK client is first built. For tests that a start-up builds no SDK client
/// (an SDK client's construction asks its HTTP client to validate the config, which builds it).
pub fn sdk_http_clients_built() -> usize {
    SDK_HTTP_CLIENTS_BUILT.load(Ordering::Relaxed)
}

static SDK_HTTP_CLIENTS_BUILT: AtomicUsize = AtomicUsize::new(0);

fn build_sdk_http_client() -> SharedHttpClient {
    SDK_HTTP_CLIENTS_BUILT.fetch_add(1, Ordering::Relaxed);
    let store = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(roots_pem());
    let context = TlsContext::builder().with_trust_store(store).build();
    let builder = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc));
    match context {
        Ok(context) => builder.tls_context(context).build_https(),
        // Building a context from a trust store cannot fail today; should it ever, the SDK's
        // default (the host's roots) is the safe fallback rather than no AWS at all.
        Err(e) => {
            tracing::warn!(error = %e, "compiled-in roots refused; AWS SDK uses the host's roots");
            builder.build_https()
        }
    }
}

/// Mozilla's roots as one PEM bundle.
fn roots_pem() -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut pem = Vec::with_capacity(webpki_root_certs::TLS_SERVER_ROOT_CERTS.len() * 2048);
    for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        pem.extend_from_slice(b"-----BEGIN CERTIFICATE-----\n");
        let encoded = b64.encode(cert.as_ref());
        for line in encoded.as_bytes().chunks(64) {
            pem.extend_from_slice(line);
            pem.push(b'\n');
        }
        pem.extend_from_slice(b"-----END CERTIFICATE-----\n");
    }
    pem
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    #[test]
    fn pem_bundle_holds_every_compiled_in_root_exactly() {
        let pem = roots_pem();
        let parsed: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(parsed.len(), webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        assert!(
            parsed.len() > 100,
            "Mozilla's program has well over 100 roots"
        );
        for (got, want) in parsed.iter().zip(webpki_root_certs::TLS_SERVER_ROOT_CERTS) {
            assert_eq!(got.as_ref(), want.as_ref());
        }
    }

    #[test]
    fn the_sdk_and_reqwest_trust_exactly_the_same_roots() {
        // The SDK adds each PEM certificate with `RootCertStore::add`, which panics on its side
        // for an unparsable one (aws-smithy-http-client `expect("cert parsable")`). The anchors
        // it derives must be the ones rustls gets from webpki-roots: the two crates must be
        // pinned to the same release (Cargo.toml).
        let mut store = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&roots_pem()) {
            store.add(cert.unwrap()).unwrap();
        }
        let key = |a: &rustls::pki_types::TrustAnchor<'_>| {
            (a.subject.to_vec(), a.subject_public_key_info.to_vec())
        };
        let mut from_pem: Vec<_> = store.roots.iter().map(key).collect();
        let mut compiled: Vec<_> = webpki_roots::TLS_SERVER_ROOTS.iter().map(key).collect();
        from_pem.sort();
        compiled.sort();
        assert_eq!(from_pem.len(), compiled.len());
        assert!(
            from_pem == compiled,
            "webpki-roots and webpki-root-certs differ"
        );
    }

    #[test]
    fn the_sdk_http_client_is_built_on_first_use() {
        let lazy = LazySdkHttpClient::default();
        assert!(lazy.0.get().is_none());
        let _ = lazy.connector_metadata();
        assert!(lazy.0.get().is_some());
    }

    #[test]
    fn client_config_offers_h2_then_http1() {
        assert_eq!(
            CLIENT_CONFIG.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[tokio::test]
    async fn http_client_builds_on_the_shared_config() {
        // reqwest refuses a preconfigured TLS value of another rustls version at build().
        http_client().unwrap();
    }
}
