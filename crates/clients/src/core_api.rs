//! core-api client (SPEC §7): REST over reqwest/rustls.
//!
//! Every call carries `X-Kosha-Principal` (the caller's `client_id`, never the agent's token),
//! `X-Kosha-User` (the calling person's `sub`, SPEC §5 "The user"),
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
use kosha_contract::headers;
use kosha_runtime::sigv4::SigV4Signer;
use reqwest::{Client, Method};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{self, ClientError};
use crate::send::{self, Caller};

/// Why a core-api call failed: the clients' one [`ClientError`].
pub type CoreApiError = ClientError;

/// Who is calling and by when the answer is needed; sent with every request.
#[derive(Debug, Clone)]
pub struct CallMeta {
    /// The caller's `client_id` (`X-Kosha-Principal`).
    pub principal: Option<String>,
    /// The calling person's `sub` (`X-Kosha-User`, SPEC §5 "The user"; a machine client's is
    /// its `client_id`).
    pub user: Option<String>,
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

/// A write core-api makes idempotent by `Idempotency-Key` (SPEC §7): `POST /v1/disputes`
/// and `POST /v1/reviews`, each on one transaction.
pub trait KeyedWrite: Serialize + Sync {
    /// The record core-api answers with.
    type Record: DeserializeOwned;
    /// The route, `/v1/...`.
    const PATH: &'static str;
    /// The transaction it writes about.
    fn transaction_id(&self) -> &str;
    /// The id of the record written (`dsp_...`, `rev_...`).
    fn record_id(record: &Self::Record) -> &str;
}

impl KeyedWrite for DisputeRequest {
    type Record = Dispute;
    const PATH: &'static str = "/v1/disputes";
    fn transaction_id(&self) -> &str {
        &self.transaction_id
    }
    fn record_id(record: &Dispute) -> &str {
        &record.dispute_id
    }
}

impl KeyedWrite for ReviewRequest {
    type Record = Review;
    const PATH: &'static str = "/v1/reviews";
    fn transaction_id(&self) -> &str {
        &self.transaction_id
    }
    fn record_id(record: &Review) -> &str {
        &record.review_id
    }
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
        self.keyed_write(meta, key, request).await
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
        self.keyed_write(meta, key, request).await
    }

    /// `POST` `W::PATH` with `Idempotency-Key: key`.
    ///
    /// # Errors
    /// [`CoreApiError`]; core-api's 404, 409 and 400 as [`CoreApiError::Status`].
    pub async fn keyed_write<W: KeyedWrite>(
        &self,
        meta: &CallMeta,
        key: &str,
        request: &W,
    ) -> Result<Written<W::Record>, CoreApiError> {
        let (record, headers) = self
            .exchange(
                meta,
                Method::POST,
                W::PATH,
                None::<&()>,
                Some(request),
                Some(key),
            )
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
        let mut req = self.http.request(method, self.url(path));
        if let Some(q) = query {
            req = req.query(q);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        if let Some(c) = &meta.chaos {
            req = req.header(headers::CHAOS, c);
        }
        if let Some(k) = idempotency_key {
            req = req.header(headers::IDEMPOTENCY_KEY, k);
        }
        if let Some(u) = &meta.user {
            req = req.header(headers::USER, u);
        }
        let caller = Caller {
            principal: meta.principal.as_deref(),
            deadline_header: meta.deadline_header.as_deref(),
            timeout: meta.timeout,
        };
        let resp = send::send(&self.http, self.signer.as_deref(), req, &caller).await?;
        if !resp.status().is_success() {
            return Err(error::refusal(resp).await);
        }
        let headers = resp.headers().clone();
        Ok((error::body(resp).await?, headers))
    }
}
