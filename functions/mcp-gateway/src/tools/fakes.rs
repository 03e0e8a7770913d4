//! Fakes of [`super::deps`]'s traits and a harness that runs one tool on them, for the
//! tools' tests (STYLE.md §7, issue 42): no HTTP, no state table, the real policies.
//!
//! Each fake answers from a queue, one entry per attempt (`Connect` once it is empty), as
//! JSON that becomes whatever the endpoint returns, and keeps what it was sent.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use kosha_clients::core_api::{CallMeta, CoreApiError, Written};
use kosha_clients::screening::{ScreenMeta, ScreeningError};
use kosha_contract::core_api::{
    Dispute, DisputeRequest, ListTransactionsQuery, Review, ReviewRequest, SearchRequest,
    SearchResponse, Transaction, TransactionPage,
};
use kosha_contract::screening::{ScreenRequest, ScreenResponse};
use kosha_resilience::config::PolicyConfig;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::policy::Policy;
use kosha_state::screening::ScreeningItem;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::call::Call;
use super::catalogue::{Entry, Tool};
use super::deps::{BoxFuture, CoreApiCalls, Deps, ScreeningCalls, ScreeningRecords};
use super::error::ToolError;
use super::observe::Sent;
use crate::backends::screening::RecordError;
use crate::backends::{Backend, PerBackend};

/// The next queued answer as `T`, or `Connect` once the queue is empty.
fn next<T: DeserializeOwned>(
    answers: &Mutex<VecDeque<Result<Value, CoreApiError>>>,
) -> Result<T, CoreApiError> {
    let answer = answers
        .lock()
        .pop_front()
        .unwrap_or(Err(CoreApiError::Connect))?;
    serde_json::from_value(answer).map_err(|_| CoreApiError::Decode)
}

/// core-api: answers every endpoint from one queue; keeps each attempt's metadata and each
/// write's key.
#[derive(Debug, Default)]
pub struct FakeCoreApi {
    /// What the next attempts answer, in order.
    pub answers: Mutex<VecDeque<Result<Value, CoreApiError>>>,
    /// Every attempt's metadata, in order.
    pub metas: Mutex<Vec<CallMeta>>,
    /// Every write's `Idempotency-Key`, in order.
    pub keys: Mutex<Vec<String>>,
}

impl FakeCoreApi {
    fn read<'a, T: DeserializeOwned + 'a>(
        &'a self,
        meta: CallMeta,
    ) -> BoxFuture<'a, Result<T, CoreApiError>> {
        self.metas.lock().push(meta);
        Box::pin(async move { next(&self.answers) })
    }

    fn write<'a, T: DeserializeOwned + 'a>(
        &'a self,
        meta: CallMeta,
        key: &str,
    ) -> BoxFuture<'a, Result<Written<T>, CoreApiError>> {
        self.keys.lock().push(key.to_owned());
        let read = self.read(meta);
        Box::pin(async move {
            Ok(Written {
                record: read.await?,
                created: true,
            })
        })
    }
}

impl CoreApiCalls for FakeCoreApi {
    fn get_transaction<'a>(
        &'a self,
        meta: CallMeta,
        _id: &'a str,
    ) -> BoxFuture<'a, Result<Transaction, CoreApiError>> {
        self.read(meta)
    }

    fn list_transactions<'a>(
        &'a self,
        meta: CallMeta,
        _account_id: &'a str,
        _query: &'a ListTransactionsQuery,
    ) -> BoxFuture<'a, Result<TransactionPage, CoreApiError>> {
        self.read(meta)
    }

    fn search<'a>(
        &'a self,
        meta: CallMeta,
        _request: &'a SearchRequest,
    ) -> BoxFuture<'a, Result<SearchResponse, CoreApiError>> {
        self.read(meta)
    }

    fn raise_dispute<'a>(
        &'a self,
        meta: CallMeta,
        key: &'a str,
        _request: &'a DisputeRequest,
    ) -> BoxFuture<'a, Result<Written<Dispute>, CoreApiError>> {
        self.write(meta, key)
    }

    fn request_review<'a>(
        &'a self,
        meta: CallMeta,
        key: &'a str,
        _request: &'a ReviewRequest,
    ) -> BoxFuture<'a, Result<Written<Review>, CoreApiError>> {
        self.write(meta, key)
    }
}

/// screening-sim: answers from a queue (`Connect` once empty), counting attempts.
#[derive(Debug, Default)]
pub struct FakeScreening {
    /// What the next attempts answer, in order.
    pub answers: Mutex<VecDeque<Result<ScreenResponse, ScreeningError>>>,
    /// Attempts made.
    pub attempts: Mutex<usize>,
}

impl ScreeningCalls for FakeScreening {
    fn screen<'a>(
        &'a self,
        _meta: ScreenMeta,
        _request: &'a ScreenRequest,
    ) -> BoxFuture<'a, Result<ScreenResponse, ScreeningError>> {
        *self.attempts.lock() += 1;
        let answer = (self.answers.lock().pop_front()).unwrap_or(Err(ScreeningError::Connect));
        Box::pin(async move { answer })
    }
}

/// The screening records in memory; `failing` refuses every write.
#[derive(Debug, Default)]
pub struct FakeRecords {
    /// Items by id.
    pub items: Mutex<HashMap<String, ScreeningItem>>,
    /// Whether writes fail (DynamoDB or SQS down).
    pub failing: bool,
}

impl FakeRecords {
    fn put(&self, item: &ScreeningItem) -> Result<(), RecordError> {
        if self.failing {
            return Err(RecordError::Timeout("PutItem"));
        }
        self.items.lock().insert(item.id.clone(), item.clone());
        Ok(())
    }
}

impl ScreeningRecords for FakeRecords {
    fn store<'a>(
        &'a self,
        item: &'a ScreeningItem,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<(), RecordError>> {
        Box::pin(async move { self.put(item) })
    }

    fn defer<'a>(
        &'a self,
        item: &'a ScreeningItem,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<(), RecordError>> {
        Box::pin(async move { self.put(item) })
    }

    fn read<'a>(
        &'a self,
        id: &'a str,
        _now_s: i64,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<ScreeningItem>, RecordError>> {
        Box::pin(async move { Ok(self.items.lock().get(id).cloned()) })
    }
}

/// The fakes, the real policies (seed 004 §1 rows, no overrides) and the call's counters.
pub struct Harness {
    /// core-api.
    pub core_api: FakeCoreApi,
    /// screening-sim.
    pub screening: FakeScreening,
    /// The screening records; `None`: none configured.
    pub records: Option<FakeRecords>,
    /// Each backend's policy.
    pub policies: PerBackend<Policy>,
    /// What the call sent.
    pub sent: Sent,
}

impl Harness {
    /// Fakes with nothing queued, records present and empty.
    pub fn new() -> Self {
        let policies = PerBackend::try_new(|b| {
            let config = PolicyConfig::from_profile(b.profile());
            Policy::try_new(b.dependency(), config, Arc::new(NoOverrides))
        });
        Self {
            core_api: FakeCoreApi::default(),
            screening: FakeScreening::default(),
            records: Some(FakeRecords::default()),
            policies: policies.unwrap(),
            sent: Sent::default(),
        }
    }

    /// Runs tool `T` for `principal` with `args`, within its budget from now.
    pub async fn run<T: Tool>(&self, principal: &str, args: Value) -> Result<Value, ToolError> {
        let deps = Deps {
            core_api: &self.core_api,
            screening: &self.screening,
            screenings: self.records.as_ref().map(|r| r as &dyn ScreeningRecords),
            policies: &self.policies,
        };
        let call = Call {
            deps,
            backends: &[
                Backend::CoreApiRead,
                Backend::CoreApiWrite,
                Backend::ScreeningSim,
            ],
            principal: Some(principal),
            // A machine client's user is its client (SPEC §5 "The user").
            user: Some(principal),
            username: None,
            deadline: Deadline::after(T::SPEC.budget),
            chaos: None,
            sent: &self.sent,
            trace: None,
        };
        let entry = Entry::of::<T>();
        let checked = entry.check(args.as_object().cloned())?;
        entry.run(&call, checked).await
    }
}
