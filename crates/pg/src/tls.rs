//! TLS to PostgreSQL (issue 16: RDS with `rds.force_ssl` refuses plain connections): the
//! `sslmode` of `DATABASE_URL`, the CA bundle of `KOSHA_DATABASE_CA_FILE`, and the rustls
//! connector [`pool`](crate::pool) and core-api's migrations connect with. rustls runs on
//! the workspace's one policy (`kosha_runtime::tls`: aws-lc-rs, TLS 1.2 and 1.3).
//!
//! `sslmode` follows libpq (PostgreSQL docs, "SSL Support", table "SSL Mode Descriptions") as
//! far as tokio-postgres allows:
//!
//! | `sslmode` | TLS | server certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (default) | when the server offers it, else plain | not checked (only encrypts), unless a CA is configured: then as `verify-ca` |
//! | `require` | always; a server without TLS is refused | as `prefer` |
//! | `verify-ca` | always | chains to the CA (any host name) |
//! | `verify-full` | always | chains to the CA and names the URL's host |
//!
//! The CA is the PEM bundle at `KOSHA_DATABASE_CA_FILE` (for RDS its global bundle; RDS's CAs
//! are not in Mozilla's program); without one, `verify-ca` and `verify-full` trust Mozilla's
//! roots (libpq's `sslrootcert=system`). A configured CA makes `prefer` and `require` check the
//! chain as libpq does when its root certificate file exists. Not supported: `allow`
//! (tokio-postgres cannot start plain and upgrade), `sslrootcert` in the URL (the CA comes from
//! the variable), client certificates. Only the URL form of `DATABASE_URL`
//! (`postgres://…?sslmode=…`) takes the `verify-*` modes; the key=value form keeps
//! tokio-postgres's own three.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The environment variable naming the CA bundle (a PEM file of one or more certificates).
pub const CA_FILE_ENV: &str = "KOSHA_DATABASE_CA_FILE";

/// What a connection demands of TLS (the table in the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP only.
    Disable,
    /// TLS when the server offers it (libpq's and tokio-postgres's default).
    Prefer,
    /// TLS or no connection.
    Require,
    /// TLS with a certificate chaining to a trusted CA.
    VerifyCa,
    /// [`SslMode::VerifyCa`] and the certificate names the host connected to.
    VerifyFull,
}

impl SslMode {
    /// The mode a libpq `sslmode` value names; `None` for any other (`allow` included).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "disable" => Some(Self::Disable),
            "prefer" => Some(Self::Prefer),
            "require" => Some(Self::Require),
            "verify-ca" => Some(Self::VerifyCa),
            "verify-full" => Some(Self::VerifyFull),
            _ => None,
        }
    }

    /// The mode tokio-postgres parsed (the key=value form of the URL, or no `sslmode`).
    pub fn from_tokio_postgres(mode: tokio_postgres::config::SslMode) -> Self {
        use tokio_postgres::config::SslMode as Pg;
        match mode {
            Pg::Disable => Self::Disable,
            Pg::Prefer => Self::Prefer,
            // `Require`, and any mode a later tokio-postgres adds: the strictest it knows.
            _ => Self::Require,
        }
    }

    /// What tokio-postgres is told: it knows `disable`, `prefer` and `require`; the `verify-*`
    /// modes are `require` plus the checks of [`connector`].
    pub fn for_tokio_postgres(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Pg;
        match self {
            Self::Disable => Pg::Disable,
            Self::Prefer => Pg::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => Pg::Require,
        }
    }
}

/// The trusted CA certificates of `KOSHA_DATABASE_CA_FILE`, checked when read: each one is a
/// usable trust anchor. `Debug` shows only how many there are.
#[derive(Clone, PartialEq, Eq)]
pub struct CaBundle(Vec<CertificateDer<'static>>);

impl std::fmt::Debug for CaBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CaBundle({} certificates)", self.0.len())
    }
}

impl CaBundle {
    /// Reads the PEM bundle at `path`.
    ///
    /// # Errors
    /// Why the file cannot be used (unreadable, not PEM, no certificate, a certificate that is
    /// not a trust anchor); the reason quotes neither the path nor the file.
    pub fn from_file(path: &str) -> Result<Self, String> {
        let pem = std::fs::read(path).map_err(|e| format!("cannot read the file: {e}"))?;
        Self::from_pem(&pem)
    }

    /// Parses a PEM bundle (`CERTIFICATE` blocks; other blocks are ignored).
    ///
    /// # Errors
    /// As [`CaBundle::from_file`].
    pub fn from_pem(pem: &[u8]) -> Result<Self, String> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the CA file is not PEM: {e}"))?;
        if certs.is_empty() {
            return Err("the CA file holds no CERTIFICATE".to_owned());
        }
        let mut store = RootCertStore::empty();
        for (i, cert) in certs.iter().enumerate() {
            store
                .add(cert.clone())
                .map_err(|e| format!("certificate {} of the CA file is unusable: {e}", i + 1))?;
        }
        Ok(Self(certs))
    }

    fn roots(&self) -> RootCertStore {
        let mut store = RootCertStore::empty();
        // Every certificate was added once already by `from_pem`.
        store.add_parsable_certificates(self.0.iter().cloned());
        store
    }
}

/// Splits the `sslmode` parameter off a `postgres://` URL, so tokio-postgres (which refuses
/// `verify-ca` and `verify-full`) parses the rest. `None` when the URL has none or is in
/// key=value form (tokio-postgres then reads its own). The last `sslmode` wins, as in libpq.
///
/// # Errors
/// An unknown `sslmode` (`allow` included) or an `sslrootcert` parameter; the message does not
/// quote the URL (it may hold a password).
pub fn take_sslmode(url: &str) -> Result<(String, Option<SslMode>), String> {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let Some((base, query)) = url.split_once('?').filter(|_| is_url) else {
        return Ok((url.to_owned(), None));
    };
    let mut mode = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "sslmode" => {
                mode =
                    Some(SslMode::parse(value).ok_or(
                        "sslmode must be disable, prefer, require, verify-ca or verify-full",
                    )?);
            }
            "sslrootcert" => {
                return Err(format!(
                    "sslrootcert is not supported; name the CA bundle in {CA_FILE_ENV}"
                ));
            }
            _ => rest.push(pair),
        }
    }
    let url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((url, mode))
}

/// The rustls connector for `mode`, trusting `ca` (or Mozilla's roots when `None`), with ALPN
/// `postgresql` (what libpq 17 sends). For [`SslMode::Disable`] it is never used.
pub fn connector(mode: SslMode, ca: Option<&CaBundle>) -> MakeRustlsConnect {
    let builder = kosha_runtime::tls::config_builder();
    let algorithms = builder.crypto_provider().signature_verification_algorithms;
    let roots = || ca.map_or_else(kosha_runtime::tls::mozilla_roots, CaBundle::roots);
    let mut config = match mode {
        SslMode::VerifyFull => builder.with_root_certificates(roots()),
        SslMode::VerifyCa => chain_only(builder, Some(roots()), algorithms),
        SslMode::Disable | SslMode::Prefer | SslMode::Require => {
            chain_only(builder, ca.map(CaBundle::roots), algorithms)
        }
    }
    .with_no_client_auth();
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    MakeRustlsConnect::new(config)
}

fn chain_only(
    builder: rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>,
    roots: Option<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
) -> rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert> {
    builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnly { roots, algorithms }))
}

/// The verifier of `verify-ca` (`roots` set: the chain is checked, the name is not) and of
/// `prefer`/`require` without a CA (`roots` `None`: any certificate). Either way the server
/// must prove it holds the certificate's key (the handshake signature is checked).
#[derive(Debug)]
struct ChainOnly {
    roots: Option<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_libpq_mode_but_allow_parses() {
        for (value, mode) in [
            ("disable", SslMode::Disable),
            ("prefer", SslMode::Prefer),
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("verify-full", SslMode::VerifyFull),
        ] {
            assert_eq!(SslMode::parse(value), Some(mode));
        }
        assert_eq!(SslMode::parse("allow"), None);
        assert_eq!(SslMode::parse("VERIFY-FULL"), None);
    }

    #[test]
    fn sslmode_is_taken_off_the_url_and_the_rest_kept() {
        let (url, mode) =
            take_sslmode("postgres://u:p@db:5432/k?sslmode=verify-full&application_name=x")
                .unwrap();
        assert_eq!(url, "postgres://u:p@db:5432/k?application_name=x");
        assert_eq!(mode, Some(SslMode::VerifyFull));
        let (url, mode) = take_sslmode("postgresql://db/k?sslmode=require").unwrap();
        assert_eq!(
            (url.as_str(), mode),
            ("postgresql://db/k", Some(SslMode::Require))
        );
        // The last one wins, as in libpq.
        let (url, mode) =
            take_sslmode("postgres://db/k?sslmode=disable&&sslmode=verify-ca&").unwrap();
        assert_eq!(
            (url.as_str(), mode),
            ("postgres://db/k", Some(SslMode::VerifyCa))
        );
        for plain in ["postgres://db/k", "host=db sslmode=require"] {
            assert_eq!(take_sslmode(plain).unwrap(), (plain.to_owned(), None));
        }
    }

    #[test]
    fn bad_modes_and_sslrootcert_are_refused_without_quoting_the_url() {
        for url in [
            "postgres://u:hunter2@db/k?sslmode=allow",
            "postgres://u:hunter2@db/k?sslmode=",
            "postgres://u:hunter2@db/k?sslrootcert=/ca.pem",
        ] {
            let e = take_sslmode(url).unwrap_err();
            assert!(!e.contains("hunter2"), "{e}");
        }
        assert!(
            take_sslmode("postgres://db/k?sslrootcert=x")
                .unwrap_err()
                .contains(CA_FILE_ENV)
        );
    }

    #[test]
    fn verify_modes_become_require_for_tokio_postgres() {
        use tokio_postgres::config::SslMode as Pg;
        for pg in [Pg::Disable, Pg::Prefer, Pg::Require] {
            assert_eq!(SslMode::from_tokio_postgres(pg).for_tokio_postgres(), pg);
        }
        assert_eq!(SslMode::Disable.for_tokio_postgres(), Pg::Disable);
        assert_eq!(SslMode::Prefer.for_tokio_postgres(), Pg::Prefer);
        for mode in [SslMode::Require, SslMode::VerifyCa, SslMode::VerifyFull] {
            assert_eq!(mode.for_tokio_postgres(), Pg::Require);
        }
    }

    #[test]
    fn a_ca_bundle_reads_every_certificate_and_debug_shows_only_the_count() {
        let ca = |name: &str| {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, name);
            let key = rcgen::KeyPair::generate().unwrap();
            params.self_signed(&key).unwrap().pem()
        };
        let pem = format!("{}{}", ca("first CA"), ca("second CA"));
        let bundle = CaBundle::from_pem(pem.as_bytes()).unwrap();
        assert_eq!(bundle.roots().len(), 2);
        assert_eq!(format!("{bundle:?}"), "CaBundle(2 certificates)");
    }

    #[test]
    fn a_ca_bundle_must_hold_usable_certificates() {
        assert!(
            CaBundle::from_pem(b"")
                .unwrap_err()
                .contains("no CERTIFICATE")
        );
        assert!(
            CaBundle::from_pem(
                b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n"
            )
            .is_err()
        );
        let junk = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(
            CaBundle::from_pem(junk.as_bytes())
                .unwrap_err()
                .contains("certificate 1")
        );
        assert!(
            CaBundle::from_file("/nonexistent/kosha-ca.pem")
                .unwrap_err()
                .contains("cannot read")
        );
    }
}
