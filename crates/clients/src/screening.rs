//! The screening-sim client (SPEC §4, §7): `POST /v1/screen` over reqwest/rustls, used by the
//! gateway's `screen_entity` and by the screening-worker (one client, so both sides of the
//! queue call the service the same way).
//!
//! Every call carries `X-Request-Deadline` ([`crate::hop::hop_deadline`]) and,
//! from the gateway, `X-Kosha-Principal`. With a [`SigV4Signer`] ([`ScreeningClient::with_signer`],
//! `KOSHA_SCREENING_AUTH=iam`) every request is signed just before it is sent, for the
//! IAM-authenticated Function URL screening-sim sits behind on AWS.
//!
//! Errors ([`ScreeningError`], the clients' one [`ClientError`]) keep screening-sim's
//! `{"error": {...}}` body; a 400 is a request screening-sim refuses as invalid
//! ([`ClientError::is_invalid_request`]), which the worker records as `failed`.

use std::sync::Arc;
use std::time::Duration;

use kosha_contract::screening::{ScreenRequest, ScreenResponse};
use kosha_runtime::sigv4::SigV4Signer;
use reqwest::Client;

use crate::error::{self, ClientError};
use crate::send::{self, Caller};

/// Why a screening-sim call failed: the clients' one [`ClientError`].
pub type ScreeningError = ClientError;

/// Who is calling and by when; sent with every request.
#[derive(Debug, Clone, Default)]
pub struct ScreenMeta {
    /// The caller's `client_id` (`X-Kosha-Principal`), from the gateway.
    pub principal: Option<String>,
    /// `X-Request-Deadline` value, already reduced by the hop margin.
    pub deadline_header: Option<String>,
    /// Hard cap on this attempt.
    pub timeout: Duration,
}

/// The screening-sim client. Cheap to clone (reqwest's pool is shared).
#[derive(Debug, Clone)]
pub struct ScreeningClient {
    http: Client,
    url: String,
    signer: Option<Arc<SigV4Signer>>,
}

impl ScreeningClient {
    /// A client for screening-sim at `base_url` (a trailing `/` is trimmed) over `http`, the
    /// process's shared client (`kosha_runtime::tls::http_client`).
    pub fn new(base_url: &str, http: Client) -> Self {
        Self {
            http,
            url: format!("{}/v1/screen", base_url.trim_end_matches('/')),
            signer: None,
        }
    }

    /// The same client, signing every request with `signer` (SigV4).
    #[must_use]
    pub fn with_signer(mut self, signer: Arc<SigV4Signer>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// `POST /v1/screen`.
    ///
    /// # Errors
    /// [`ScreeningError`].
    pub async fn screen(
        &self,
        meta: &ScreenMeta,
        request: &ScreenRequest,
    ) -> Result<ScreenResponse, ScreeningError> {
        let caller = Caller {
            principal: meta.principal.as_deref(),
            deadline_header: meta.deadline_header.as_deref(),
            timeout: meta.timeout,
        };
        let req = self.http.post(&self.url).json(request);
        let resp = send::send(&self.http, self.signer.as_deref(), req, &caller).await?;
        if resp.status().is_success() {
            error::body(resp).await
        } else {
            Err(error::refusal(resp).await)
        }
    }
}
