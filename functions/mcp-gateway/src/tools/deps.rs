//! What a tool call may use of the gateway ([`Deps`]): core-api's endpoints, screening-sim's,
//! the screening records and each backend's policy, each behind a small trait, so every tool
//! runs against fakes in its tests (STYLE.md §7, issue 42).
//!
//! - **What it holds:** borrows of the four parts of the gateway's state that tools use; the
//!   rest (config, verifier, rate limiter, overrides, chaos gate) stays with the server, which
//!   uses it before the tool runs.
//! - **What it returns:** every dependency call is a boxed future ([`BoxFuture`]). The policy
//!   keeps each attempt's future inline in its state, so a core-api or screening-sim attempt
//!   was boxed already (issue 29): the box moved from [`super::call`] to here, one allocation
//!   per attempt as before.
//! - **Neighbours:** [`crate::state::Gateway::deps`] lends the real ones; [`super::call::Call`]
//!   carries them through one `tools/call`. The module imports no gateway state, so a tool
//!   never reaches back into the room that built it (the cycle config → tools → state →
//!   config of issue 42).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use kosha_clients::core_api::{CallMeta, CoreApi, CoreApiError, KeyedWrite, Written};
use kosha_clients::screening::{ScreenMeta, ScreeningClient, ScreeningError};
use kosha_contract::core_api::{
    Dispute, DisputeRequest, ListTransactionsQuery, Review, ReviewRequest, SearchRequest,
    SearchResponse, Transaction, TransactionPage,
};
use kosha_contract::screening::{ScreenRequest, ScreenResponse};
use kosha_resilience::policy::Policy;
use kosha_state::screening::ScreeningItem;

use crate::backends::PerBackend;
use crate::backends::screening::{RecordError, Screenings};

/// A boxed, sendable future borrowing for `'a`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The core-api endpoints the tools call (SPEC §7), one attempt each; the caller's policy
/// repeats and bounds them.
pub trait CoreApiCalls: Send + Sync {
    /// `GET /v1/transactions/{id}`.
    fn get_transaction<'a>(
        &'a self,
        meta: CallMeta,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Transaction, CoreApiError>>;

    /// `GET /v1/accounts/{id}/transactions`.
    fn list_transactions<'a>(
        &'a self,
        meta: CallMeta,
        account_id: &'a str,
        query: &'a ListTransactionsQuery,
    ) -> BoxFuture<'a, Result<TransactionPage, CoreApiError>>;

    /// `POST /v1/knowledge/search`.
    fn search<'a>(
        &'a self,
        meta: CallMeta,
        request: &'a SearchRequest,
    ) -> BoxFuture<'a, Result<SearchResponse, CoreApiError>>;

    /// `POST /v1/disputes` with `Idempotency-Key: key`.
    fn raise_dispute<'a>(
        &'a self,
        meta: CallMeta,
        key: &'a str,
        request: &'a DisputeRequest,
    ) -> BoxFuture<'a, Result<Written<Dispute>, CoreApiError>>;

    /// `POST /v1/reviews` with `Idempotency-Key: key`.
    fn request_review<'a>(
        &'a self,
        meta: CallMeta,
        key: &'a str,
        request: &'a ReviewRequest,
    ) -> BoxFuture<'a, Result<Written<Review>, CoreApiError>>;
}

impl CoreApiCalls for CoreApi {
    fn get_transaction<'a>(
        &'a self,
        meta: CallMeta,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Transaction, CoreApiError>> {
        Box::pin(async move { CoreApi::get_transaction(self, &meta, id).await })
    }

    fn list_transactions<'a>(
        &'a self,
        meta: CallMeta,
        account_id: &'a str,
        query: &'a ListTransactionsQuery,
    ) -> BoxFuture<'a, Result<TransactionPage, CoreApiError>> {
        Box::pin(async move { CoreApi::list_transactions(self, &meta, account_id, query).await })
    }

    fn search<'a>(
        &'a self,
        meta: CallMeta,
        request: &'a SearchRequest,
    ) -> BoxFuture<'a, Result<SearchResponse, CoreApiError>> {
        Box::pin(async move { CoreApi::search(self, &meta, request).await })
    }

    fn raise_dispute<'a>(
        &'a self,
        meta: CallMeta,
        key: &'a str,
        request: &'a DisputeRequest,
    ) -> BoxFuture<'a, Result<Written<Dispute>, CoreApiError>> {
        Box::pin(async move { CoreApi::raise_dispute(self, &meta, key, request).await })
    }

    fn request_review<'a>(
        &'a self,
        meta: CallMeta,
        key: &'a str,
        request: &'a ReviewRequest,
    ) -> BoxFuture<'a, Result<Written<Review>, CoreApiError>> {
        Box::pin(async move { CoreApi::request_review(self, &meta, key, request).await })
    }
}

/// A keyed write a tool sends (`raise_dispute`, `flag_transaction_for_review`): which
/// [`CoreApiCalls`] endpoint takes it.
pub trait ToolWrite: KeyedWrite + Send {
    /// Sends `request` with `Idempotency-Key: key` through `api`.
    fn send<'a>(
        api: &'a dyn CoreApiCalls,
        meta: CallMeta,
        key: &'a str,
        request: &'a Self,
    ) -> BoxFuture<'a, Result<Written<Self::Record>, CoreApiError>>;
}

impl ToolWrite for DisputeRequest {
    fn send<'a>(
        api: &'a dyn CoreApiCalls,
        meta: CallMeta,
        key: &'a str,
        request: &'a Self,
    ) -> BoxFuture<'a, Result<Written<Dispute>, CoreApiError>> {
        api.raise_dispute(meta, key, request)
    }
}

impl ToolWrite for ReviewRequest {
    fn send<'a>(
        api: &'a dyn CoreApiCalls,
        meta: CallMeta,
        key: &'a str,
        request: &'a Self,
    ) -> BoxFuture<'a, Result<Written<Review>, CoreApiError>> {
        api.request_review(meta, key, request)
    }
}

/// screening-sim's `POST /v1/screen` (SPEC §4), one attempt.
pub trait ScreeningCalls: Send + Sync {
    /// Screens `request`.
    fn screen<'a>(
        &'a self,
        meta: ScreenMeta,
        request: &'a ScreenRequest,
    ) -> BoxFuture<'a, Result<ScreenResponse, ScreeningError>>;
}

impl ScreeningCalls for ScreeningClient {
    fn screen<'a>(
        &'a self,
        meta: ScreenMeta,
        request: &'a ScreenRequest,
    ) -> BoxFuture<'a, Result<ScreenResponse, ScreeningError>> {
        Box::pin(async move { ScreeningClient::screen(self, &meta, request).await })
    }
}

/// The screening records (issue 12): finished and pending screenings, each call bounded by
/// `timeout` ([`Screenings`] is the real one).
pub trait ScreeningRecords: Send + Sync {
    /// Stores a finished screening.
    fn store<'a>(
        &'a self,
        item: &'a ScreeningItem,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), RecordError>>;

    /// Records a pending screening and queues it for the worker; on failure nothing is left.
    fn defer<'a>(
        &'a self,
        item: &'a ScreeningItem,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), RecordError>>;

    /// Screening `id` as of `now_s` (epoch seconds), if present and not expired.
    fn read<'a>(
        &'a self,
        id: &'a str,
        now_s: i64,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<ScreeningItem>, RecordError>>;
}

impl ScreeningRecords for Screenings {
    fn store<'a>(
        &'a self,
        item: &'a ScreeningItem,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), RecordError>> {
        Box::pin(Screenings::store(self, item, timeout))
    }

    fn defer<'a>(
        &'a self,
        item: &'a ScreeningItem,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<(), RecordError>> {
        Box::pin(Screenings::defer(self, item, timeout))
    }

    fn read<'a>(
        &'a self,
        id: &'a str,
        now_s: i64,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<ScreeningItem>, RecordError>> {
        Box::pin(Screenings::read(self, id, now_s, timeout))
    }
}

/// What a tool call may use: the dependency clients, the screening records and the policies.
/// `Copy`: a borrow of each.
#[derive(Clone, Copy)]
pub struct Deps<'a> {
    /// core-api.
    pub core_api: &'a dyn CoreApiCalls,
    /// screening-sim.
    pub screening: &'a dyn ScreeningCalls,
    /// The screening records; `None` when none are configured (every screening is then
    /// answered unrecorded and nothing can be deferred).
    pub screenings: Option<&'a dyn ScreeningRecords>,
    /// Each backend's resilience policy (seed 004 §1).
    pub policies: &'a PerBackend<Policy>,
}

impl std::fmt::Debug for Deps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deps")
            .field("screenings", &self.screenings.is_some())
            .finish_non_exhaustive()
    }
}
