//! Getting the raw JWKS document: the [`JwksFetcher`] seam and its implementations.
//!
//! A fetcher returns the document's bytes or a [`FetchError`]; it does not parse, cache or
//! retry (the cache in `jwks::cache` decides when to call it, at most one call in flight).
//! Bounds: the shared client's connect timeout (1 s in kosha-runtime), whole request 3 s, body
//! at most [`MAX_JWKS_BYTES`]; anything else
//! is an error, which the cache turns into "serve cached keys" or, with no usable keys,
//! `invalid_token` (SPEC §10 "JWKS" row).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use url::Url;

/// Largest JWKS body accepted, bytes. Cognito's is about 1 KiB.
pub const MAX_JWKS_BYTES: usize = 64 * 1024;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// The future a [`JwksFetcher`] returns.
pub type FetchFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>>;

/// Fetches the JWKS document. Implement it in tests to count calls or simulate outages.
pub trait JwksFetcher: Send + Sync + 'static {
    /// One attempt to get the document's bytes. Must finish in bounded time.
    fn fetch(&self) -> FetchFuture<'_>;
}

/// The key set could not be fetched. Messages name the cause (status, I/O kind), never a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// Network error, timeout, non-2xx status, unreadable file.
    #[error("JWKS unavailable: {0}")]
    Unavailable(String),
    /// The body exceeded [`MAX_JWKS_BYTES`].
    #[error("JWKS larger than {MAX_JWKS_BYTES} bytes")]
    TooLarge,
}

/// Fetches over HTTPS (or loopback HTTP) with reqwest and rustls.
#[derive(Debug, Clone)]
pub struct HttpJwksFetcher {
    client: reqwest::Client,
    url: Url,
}

impl HttpJwksFetcher {
    /// A fetcher for `url` on `client` (the process's shared client, which holds the TLS
    /// policy and connect timeout); each fetch is bounded to 3 s in all.
    pub fn new(url: Url, client: reqwest::Client) -> Self {
        Self { client, url }
    }

    async fn get(&self) -> Result<Vec<u8>, FetchError> {
        let unavailable = |e: reqwest::Error| FetchError::Unavailable(e.without_url().to_string());
        let mut response = self
            .client
            .get(self.url.clone())
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(unavailable)?;
        let status = response.status();
        if !status.is_success() {
            return Err(FetchError::Unavailable(format!(
                "status {}",
                status.as_u16()
            )));
        }
        if response
            .content_length()
            .is_some_and(|len| len > MAX_JWKS_BYTES as u64)
        {
            return Err(FetchError::TooLarge);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unavailable)? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(FetchError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

impl JwksFetcher for HttpJwksFetcher {
    fn fetch(&self) -> FetchFuture<'_> {
        Box::pin(self.get())
    }
}

/// Reads a local file (the dev stack's `.dev/jwks.json`) on the blocking pool.
#[derive(Debug, Clone)]
pub struct FileJwksFetcher {
    path: PathBuf,
}

impl FileJwksFetcher {
    /// A fetcher reading `path` on every call.
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    async fn read(&self) -> Result<Vec<u8>, FetchError> {
        let path = self.path.clone();
        let read = tokio::task::spawn_blocking(move || std::fs::read(path))
            .await
            .map_err(|e| FetchError::Unavailable(e.to_string()))?;
        let body = read.map_err(|e| FetchError::Unavailable(e.kind().to_string()))?;
        if body.len() > MAX_JWKS_BYTES {
            return Err(FetchError::TooLarge);
        }
        Ok(body)
    }
}

impl JwksFetcher for FileJwksFetcher {
    fn fetch(&self) -> FetchFuture<'_> {
        Box::pin(self.read())
    }
}

/// Always returns the same document: for tests of code that needs a verifier.
#[derive(Debug, Clone)]
pub struct StaticJwks(pub Vec<u8>);

impl JwksFetcher for StaticJwks {
    fn fetch(&self) -> FetchFuture<'_> {
        let body = self.0.clone();
        Box::pin(async move { Ok(body) })
    }
}
