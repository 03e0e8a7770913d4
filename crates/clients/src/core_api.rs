//! core-api client (SPEC §7): REST over reqwest/rustls.
//!
//! Every call carries `X-Kosha-Principal` (the caller's `client_id`, never the agent's token),
//! `X-Request-Deadline` (the gateway's deadline less the 150 ms hop margin) and the call's
//! `traceparent` (SPEC §12, [`kosha_runtime::trace::propagate`]). Errors keep
//! core-api's `{"error": {"code", "message", ...}}` body so the tool layer can map 4xx to the
//! matching tool error and 5xx or an unreachable core-api to `dependency_unavailable`.
//!
//! With a [`SigV4Signer`] ([`CoreApi::with_signer`], `KOSHA_CORE_API_AUTH=iam`) every request
//! is signed just before it is sent, so core-api can sit behind an IAM-authenticated Function
//! URL. Writes also carry `Idempotency-Key`; a replayed answer (`Idempotent-Replayed: true`)
//! comes back as [`Written::created`] `false`. The base URL may end with `/` (the template's `FunctionUrl` output does): it is
//! trimmed, so paths never start with `//`.

use std::sync::Arc;
use std::time::Duration;

use kosha_contract::core_api::{
    Dispute, DisputeRequest, ListTransactionsQuery, Review, ReviewRequest, SearchRequest,
    SearchResponse, Transaction, TransactionPage, TransactionResponse,
};
use kosha_contract::dependency::Dependency;
use kosha_contract::error::{ErrorBody, ErrorCode};
use kosha_contract::headers;
use kosha_resilience::chaos::InjectedFault;
use kosha_resilience::classify::{Classify, ErrorClass};
use reqwest::{Client, Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::backends::sigv4::{SigV4Signer, SignError};

/// Why a core-api call failed.
#[derive(Debug, thiserror::Error)]
pub enum CoreApiError {
    /// core-api answered with an error status and (usually) its error body (SPEC §7).
    #[error("core-api answered {status}: {}", code.as_str())]
    Status {
        /// The HTTP status.
        status: StatusCode,
        /// core-api's error code; [`ErrorCode::Unknown`] when the body had none we know.
        code: ErrorCode,
        /// core-api's message, safe to show the agent for 4xx.
        message: String,
        /// `Retry-After` or `retry_after_s`, when given.
        retry_after: Option<Duration>,
        /// core-api's own failing dependency (`postgres`, `openai`), when it named one we
        /// know.
        dependency: Option<Dependency>,
    },
    /// No connection could be made, or it broke before a response.
    #[error("core-api unreachable")]
    Connect,
    /// The attempt timed out.
    #[error("core-api timed out")]
    Timeout,
    /// The response was not the JSON we expected.
    #[error("core-api sent an unexpected response")]
    Decode,
    /// The request could not be signed (no AWS credentials in time): it was never sent.
    #[error("core-api request not signed: {0}")]
    Signing(#[from] SignError),
    /// The request could not be built (a URL or header our client refuses): it was never
    /// sent, and says nothing about core-api's health.
    #[error("core-api request could not be built")]
    Build,
}

/// Who is calling and by when the answer is needed; sent with every request.
#[derive(Debug, Clone)]
pub struct CallMeta {
    /// The caller's `client_id` (`X-Kosha-Principal`).
    pub principal: Option<String>,
    /// `X-Request-Deadline` value (RFC 3339 UTC with ms), already reduced by the hop margin.
    pub deadline_header: Option<String>,
    /// Hard cap on this attempt, in addition to the deadline header.
    pub timeout: Duration,
    /// An honoured `X-Kosha-Chaos` header, forwarded unchanged (SPEC §9).
    pub chaos: Option<String>,
}

/// A write's answer: the record, and whether this request created it (`false` when core-api
/// replayed an earlier request's answer, `Idempotent-Replayed: true`, SPEC §7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written<T> {
    /// The record as core-api answered it.
    pub record: T,
    /// `true` for a fresh 201, `false` for a replay.
    pub created: bool,
}

/// The core-api client. Cheap to clone (reqwest's pool is shared).
#[derive(Debug, Clone)]
pub struct CoreApi {
    http: Client,
    base: String,
    signer: Option<Arc<SigV4Signer>>,
}

impl CoreApi {
    /// A client for `base_url` (`http://127.0.0.1:8081`, no trailing slash needed) over `http`,
    /// the process's shared client (`kosha_runtime::tls::http_client`: TLS policy, 1 s
    /// connect timeout, idle pool); each call's total time is bounded by [`CallMeta::timeout`].
    pub fn new(base_url: &str, http: Client) -> Self {
        Self {
            http,
            base: base_url.trim_end_matches('/').to_owned(),
            signer: None,
        }
    }

    /// The same client, signing every request with `signer` (SigV4 for an IAM-authenticated
    /// Function URL).
    #[must_use]
    pub fn with_signer(mut self, signer: Arc<SigV4Signer>) -> Self {
        self.signer = Some(signer);
        self
    }

    /// The full URL of `path` (`/v1/...`) on this client's core-api.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// `GET /v1/transactions/{id}`.
    ///
    /// # Errors
    /// [`CoreApiError`].
    pub async fn get_transaction(
        &self,
        meta: &CallMeta,
        id: &str,
    ) -> Result<Transaction, CoreApiError> {
        let path = format!("/v1/transactions/{id}");
        let answer: TransactionResponse = self
            .send(meta, Method::GET, &path, None::<&()>, None::<&()>)
            .await?;
        Ok(answer.transaction)
    }

    /// `GET /v1/accounts/{id}/transactions`.
    ///
    /// # Errors
    /// [`CoreApiError`].
    pub async fn list_transactions(
        &self,
        meta: &CallMeta,
        account_id: &str,
        query: &ListTransactionsQuery,
    ) -> Result<TransactionPage, CoreApiError> {
        let path = format!("/v1/accounts/{account_id}/transactions");
        self.send(meta, Method::GET, &path, Some(query), None::<&()>)
            .await
    }

    /// `POST /v1/knowledge/search`.
    ///
    /// # Errors
    /// [`CoreApiError`].
    pub async fn search(
        &self,
        meta: &CallMeta,
        request: &SearchRequest,
    ) -> Result<SearchResponse, CoreApiError> {
        self.send(
            meta,
            Method::POST,
            "/v1/knowledge/search",
            None::<&()>,
            Some(request),
        )
        .await
    }

    /// `POST /v1/disputes` with `Idempotency-Key: key`.
    ///
    /// # Errors
    /// [`CoreApiError`]; core-api's 404 (unknown transaction), 409 (key reused with another
    /// body, or the open dispute it names) and 400 as [`CoreApiError::Status`].
    pub async fn raise_dispute(
        &self,
        meta: &CallMeta,
        key: &str,
        request: &DisputeRequest,
    ) -> Result<Written<Dispute>, CoreApiError> {
        self.write(meta, "/v1/disputes", key, request).await
    }

    /// `POST /v1/reviews` with `Idempotency-Key: key`.
    ///
    /// # Errors
    /// [`CoreApiError`]; core-api's 404, 409 and 400 as [`CoreApiError::Status`].
    pub async fn request_review(
        &self,
        meta: &CallMeta,
        key: &str,
        request: &ReviewRequest,
    ) -> Result<Written<Review>, CoreApiError> {
        self.write(meta, "/v1/reviews", key, request).await
    }

    async fn write<B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        meta: &CallMeta,
        path: &str,
        key: &str,
        body: &B,
    ) -> Result<Written<T>, CoreApiError> {
        let (record, headers) = self
            .exchange(meta, Method::POST, path, None::<&()>, Some(body), Some(key))
            .await?;
        let replayed = headers
            .get(headers::IDEMPOTENT_REPLAYED)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        Ok(Written {
            record,
            created: !replayed,
        })
    }

    async fn send<Q: Serialize + ?Sized, B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        meta: &CallMeta,
        method: Method,
        path: &str,
        query: Option<&Q>,
        body: Option<&B>,
    ) -> Result<T, CoreApiError> {
        let (answer, _) = self.exchange(meta, method, path, query, body, None).await?;
        Ok(answer)
    }

    /// One request: the answer and its headers, or the error.
    async fn exchange<Q: Serialize + ?Sized, B: Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        meta: &CallMeta,
        method: Method,
        path: &str,
        query: Option<&Q>,
        body: Option<&B>,
        idempotency_key: Option<&str>,
    ) -> Result<(T, reqwest::header::HeaderMap), CoreApiError> {
        let mut req = self
            .http
            .request(method, self.url(path))
            .timeout(meta.timeout);
        if let Some(q) = query {
            req = req.query(q);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        if let Some(p) = &meta.principal {
            req = req.header(headers::PRINCIPAL, p);
        }
        if let Some(d) = &meta.deadline_header {
            req = req.header(headers::REQUEST_DEADLINE, d);
        }
        if let Some(c) = &meta.chaos {
            req = req.header(headers::CHAOS, c);
        }
        if let Some(k) = idempotency_key {
            req = req.header(headers::IDEMPOTENCY_KEY, k);
        }
        // `traceparent`/`tracestate` of the call (SPEC §12); before signing.
        req = kosha_runtime::trace::propagate(req);
        let mut request = req.build().map_err(|e| {
            tracing::error!(error = %e, "core-api request not built");
            CoreApiError::Build
        })?;
        if let Some(signer) = &self.signer {
            signer.sign(&mut request, meta.timeout).await?;
        }
        let resp = self.http.execute(request).await.map_err(transport_error)?;
        let status = resp.status();
        if status.is_success() {
            let headers = resp.headers().clone();
            let answer = resp.json::<T>().await.map_err(|e| {
                if e.is_timeout() {
                    CoreApiError::Timeout
                } else {
                    CoreApiError::Decode
                }
            })?;
            return Ok((answer, headers));
        }
        let header_retry = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        // A body that is not SPEC §7's (a proxy's page, an empty 502) still has a status.
        let detail = resp.json::<ErrorBody>().await.ok().map(|b| b.error);
        let code = detail.as_ref().map_or(ErrorCode::Unknown, |d| d.code);
        let message = detail
            .as_ref()
            .map(|d| d.message.clone())
            .unwrap_or_default();
        let retry_after = header_retry.or_else(|| {
            detail
                .as_ref()
                .and_then(|d| d.retry_after_s)
                .map(Duration::from_secs)
        });
        let dependency = detail
            .and_then(|d| d.dependency)
            .and_then(|name| Dependency::parse(&name));
        Err(CoreApiError::Status {
            status,
            code,
            message,
            retry_after,
            dependency,
        })
    }
}

impl From<InjectedFault> for CoreApiError {
    /// A chaos fault as the failure it stands for (SPEC §9): `error` is a 503 from core-api,
    /// `reset` a broken connection.
    fn from(fault: InjectedFault) -> Self {
        match fault {
            InjectedFault::Unavailable => Self::Status {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: ErrorCode::DependencyUnavailable,
                message: String::new(),
                retry_after: None,
                dependency: None,
            },
            InjectedFault::Reset => Self::Connect,
        }
    }
}

impl Classify for CoreApiError {
    /// Seed 004 §3: connect errors, timeouts, 502/503/504 and 429 are retried; 5xx count as
    /// breaker failures; other 4xx are the caller's and neither.
    fn class(&self) -> ErrorClass {
        match self {
            Self::Status {
                status,
                retry_after,
                ..
            } if status.as_u16() == 429 || status.is_server_error() => ErrorClass::Status {
                status: status.as_u16(),
                retry_after: *retry_after,
            },
            Self::Status { .. } => ErrorClass::Caller,
            // The call was not made; another attempt may find credentials (a transient
            // credential-source failure), and a breaker should count it like an outage.
            Self::Connect | Self::Signing(_) => ErrorClass::Connect,
            Self::Timeout => ErrorClass::Timeout,
            Self::Decode => ErrorClass::Fatal,
            // Never sent: neither retried nor counted against core-api's breaker.
            Self::Build => ErrorClass::Caller,
        }
    }
}

fn transport_error(e: reqwest::Error) -> CoreApiError {
    if e.is_timeout() {
        CoreApiError::Timeout
    } else {
        CoreApiError::Connect
    }
}
