//! Local development keys and tokens: never used by a deployed gateway (SPEC §2, §11).
//!
//! - [`generate`] makes an RSA-2048 key pair with aws-lc-rs (the library that verifies the
//!   signatures; in-process, no `openssl` shell-out) and returns the private key as a PKCS#8
//!   PEM, its `kid` (the RFC 7638 SHA-256 thumbprint, so the key alone determines it) and a
//!   JWKS with the public half (`kty RSA`, `alg RS256`, `use sig`).
//! - [`write_key_files`] stores them as `dev-signing-key.pem` (mode 0600 on Unix) and
//!   `jwks.json`, which the dev stack serves through `KOSHA_JWKS_URL=file:///…/jwks.json`.
//! - [`mint`] signs a Cognito-shaped access token ([`MintClaims`]); [`sign_claims`] signs any
//!   JSON claims (tests of bad tokens).

mod mint;

use std::path::{Path, PathBuf};

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use base64::Engine;
use jsonwebtoken::jwk::{Jwk, KeyAlgorithm, PublicKeyUse, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey};

pub use mint::{MintClaims, mint, sign_claims, user_scope};

/// File name of the private key written by [`write_key_files`].
pub const PRIVATE_KEY_FILE: &str = "dev-signing-key.pem";
/// File name of the JWKS written by [`write_key_files`].
pub const JWKS_FILE: &str = "jwks.json";

/// A dev key pair.
#[derive(Clone)]
pub struct DevKeys {
    /// The private key, PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`). Secret.
    pub private_pem: String,
    /// The key id: RFC 7638 thumbprint (SHA-256, base64url) of the public key.
    pub kid: String,
    /// `{"keys":[{…public key…}]}`.
    pub jwks_json: String,
}

impl std::fmt::Debug for DevKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevKeys")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// Dev key or token operations failed. Messages never contain key material or tokens.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    /// RSA key generation failed.
    #[error("RSA key generation failed")]
    KeyGeneration,
    /// The PEM is not an RSA private key.
    #[error("not an RSA private key PEM")]
    InvalidKey,
    /// Signing or serialising the token failed.
    #[error("token signing failed: {0}")]
    Signing(String),
    /// The system clock is before 1970.
    #[error("system clock is before the Unix epoch")]
    Clock,
    /// Reading or writing a key file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Generates an RSA-2048 key pair with its `kid` and JWKS.
pub fn generate() -> Result<DevKeys, DevError> {
    let pair = KeyPair::generate(KeySize::Rsa2048).map_err(|_| DevError::KeyGeneration)?;
    let der = pair.as_der().map_err(|_| DevError::KeyGeneration)?;
    let private_pem = pem("PRIVATE KEY", der.as_ref());
    from_private_pem(private_pem)
}

/// The [`DevKeys`] of an existing private key PEM (PKCS#8 or PKCS#1).
pub fn from_private_pem(private_pem: String) -> Result<DevKeys, DevError> {
    let kid = key_id(&private_pem)?;
    let jwks_json = jwks_json(&private_pem, &kid)?;
    Ok(DevKeys {
        private_pem,
        kid,
        jwks_json,
    })
}

/// The `kid` of a private key: the RFC 7638 SHA-256 thumbprint of its public half.
pub fn key_id(private_pem: &str) -> Result<String, DevError> {
    public_jwk(private_pem)?
        .thumbprint(ThumbprintHash::SHA256)
        .map_err(|_| DevError::InvalidKey)
}

/// A JWKS holding the public half of `private_pem` under `kid`.
pub fn jwks_json(private_pem: &str, kid: &str) -> Result<String, DevError> {
    let mut jwk = public_jwk(private_pem)?;
    jwk.common.key_id = Some(kid.to_owned());
    jwk.common.public_key_use = Some(PublicKeyUse::Signature);
    jwk.common.key_algorithm = Some(KeyAlgorithm::RS256);
    serde_json::to_string_pretty(&serde_json::json!({ "keys": [jwk] }))
        .map_err(|e| DevError::Signing(e.to_string()))
}

/// Writes `dir/dev-signing-key.pem` (0600 on Unix) and `dir/jwks.json`, creating `dir`.
/// Returns the two paths.
pub fn write_key_files(dir: &Path, keys: &DevKeys) -> Result<(PathBuf, PathBuf), DevError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DevError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let key_path = dir.join(PRIVATE_KEY_FILE);
    write_private(&key_path, keys.private_pem.as_bytes()).map_err(io(&key_path))?;
    let jwks_path = dir.join(JWKS_FILE);
    std::fs::write(&jwks_path, keys.jwks_json.as_bytes()).map_err(io(&jwks_path))?;
    Ok((key_path, jwks_path))
}

/// Reads a private key PEM file written by [`write_key_files`].
pub fn read_private_pem(path: &Path) -> Result<String, DevError> {
    std::fs::read_to_string(path).map_err(|source| DevError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn public_jwk(private_pem: &str) -> Result<Jwk, DevError> {
    let key =
        EncodingKey::from_rsa_pem(private_pem.as_bytes()).map_err(|_| DevError::InvalidKey)?;
    Jwk::from_encoding_key(&key, Algorithm::RS256).map_err(|_| DevError::InvalidKey)
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}
