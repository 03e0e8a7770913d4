//! Each tool on fakes of its dependencies ([`super::fakes`]): what it sends, what it
//! answers, how it degrades (SPEC §3, §4, §10; issue 42).

use std::sync::Arc;

use http::StatusCode;
use kosha_clients::core_api::CoreApiError;
use kosha_contract::dependency::Dependency;
use kosha_contract::error::ErrorCode;
use kosha_contract::screening::ScreenRequest;
use kosha_resilience::config::PolicyConfig;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::policy::Policy;
use kosha_state::screening::{ScreeningItem, ScreeningState};
use serde_json::{Value, json};

use super::error::ToolError;
use super::fakes::{FakeRecords, Harness};
use super::get_screening_result::GetScreeningResult;
use super::get_service_health::GetServiceHealth;
use super::get_transaction::GetTransaction;
use super::raise_dispute::RaiseDispute;
use super::screen_entity::ScreenEntity;
use crate::backends::Backend;

fn status(code: u16, error: ErrorCode) -> CoreApiError {
    CoreApiError::Status {
        status: StatusCode::from_u16(code).unwrap(),
        code: error,
        message: "from core-api".to_owned(),
        retry_after: None,
        dependency: None,
    }
}

fn transaction() -> Value {
    json!({
        "transaction_id": "txn_000001", "account_id": "acc_0001", "amount_minor": -1250,
        "currency": "EUR", "merchant": "Cafe", "category": "dining", "status": "booked",
        "booked_at": "2026-03-04T10:15:00Z"
    })
}

fn code(result: &Result<Value, ToolError>) -> ErrorCode {
    result.as_ref().unwrap_err().code()
}

#[tokio::test(start_paused = true)]
async fn a_read_sends_the_principal_and_the_hop_deadline_and_retries_a_503() {
    let h = Harness::new();
    h.core_api.answers.lock().extend([
        Err(status(503, ErrorCode::DependencyUnavailable)),
        Ok(transaction()),
    ]);
    let out = h
        .run::<GetTransaction>("agent-1", json!({"transaction_id": "txn_000001"}))
        .await
        .unwrap();
    assert_eq!(out["transaction"]["merchant"], "Cafe");
    let metas = h.core_api.metas.lock();
    assert_eq!(metas.len(), 2, "the 503 is retried");
    assert!(
        metas
            .iter()
            .all(|m| m.principal.as_deref() == Some("agent-1"))
    );
    assert!(metas.iter().all(|m| m.deadline_header.is_some()));
}

#[tokio::test(start_paused = true)]
async fn core_apis_404_is_not_found_and_an_impossible_id_calls_nothing() {
    let h = Harness::new();
    h.core_api
        .answers
        .lock()
        .push_back(Err(status(404, ErrorCode::NotFound)));
    let found = h
        .run::<GetTransaction>("agent-1", json!({"transaction_id": "txn_000001"}))
        .await;
    assert_eq!(code(&found), ErrorCode::NotFound);
    // More digits than any record id has (kosha_contract::ids::MAX_DIGITS).
    let digits = "1".repeat(kosha_contract::ids::MAX_DIGITS + 1);
    let impossible = h
        .run::<GetTransaction>(
            "agent-1",
            json!({"transaction_id": format!("txn_{digits}")}),
        )
        .await;
    assert_eq!(code(&impossible), ErrorCode::NotFound);
    assert_eq!(h.core_api.metas.lock().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_write_is_sent_once_with_a_derived_key_even_when_it_fails() {
    let mut h = Harness::new();
    // Even a write policy configured for three attempts sends a write once (seed 004 §1).
    let mut config = PolicyConfig::from_profile(Backend::CoreApiWrite.profile());
    config.retry.max_attempts = 3;
    h.policies.core_api_write =
        Policy::try_new(Dependency::CoreApi, config, Arc::new(NoOverrides)).unwrap();
    h.core_api
        .answers
        .lock()
        .extend((0..3).map(|_| Err(status(503, ErrorCode::DependencyUnavailable))));
    let args = json!({"transaction_id": "txn_000001", "reason": "not mine"});
    let failed = h.run::<RaiseDispute>("agent-1", args).await;
    assert_eq!(code(&failed), ErrorCode::DependencyUnavailable);
    assert_eq!(
        h.core_api.metas.lock().len(),
        1,
        "a write is never repeated"
    );
    let keys = h.core_api.keys.lock();
    assert!(keys[0].starts_with("kosha-derived-"), "{keys:?}");
}

#[tokio::test(start_paused = true)]
async fn health_reports_every_backend_from_its_policy() {
    let h = Harness::new();
    let out = h
        .run::<GetServiceHealth>("operator-1", json!({}))
        .await
        .unwrap();
    assert_eq!(out["status"], "ok");
    let names: Vec<&str> = out["dependencies"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["core-api", "core-api-writes", "screening-sim"]);
    assert_eq!(out["dependencies"]["core-api"]["capacity"], 32);
}

#[tokio::test(start_paused = true)]
async fn an_unavailable_sim_defers_into_the_records_and_the_owner_reads_it_pending() {
    let h = Harness::new();
    let out = h
        .run::<ScreenEntity>("agent-1", json!({"name": "Jane Doe"}))
        .await
        .unwrap();
    assert_eq!(out["status"], "deferred");
    assert!(out["retry_after_s"].as_u64().unwrap() >= 5);
    assert_eq!(*h.screening.attempts.lock(), 2, "the policy's two attempts");
    let id = out["screening_id"].as_str().unwrap();
    let args = json!({"screening_id": id});
    let read = h
        .run::<GetScreeningResult>("agent-1", args.clone())
        .await
        .unwrap();
    assert_eq!(read["status"], "pending");
    let other = h.run::<GetScreeningResult>("agent-2", args).await;
    assert_eq!(
        code(&other),
        ErrorCode::NotFound,
        "another client's screening"
    );
}

#[tokio::test(start_paused = true)]
async fn a_deferral_that_cannot_be_recorded_is_dependency_unavailable() {
    let mut h = Harness::new();
    h.records = Some(FakeRecords {
        failing: true,
        ..FakeRecords::default()
    });
    let out = h
        .run::<ScreenEntity>("agent-1", json!({"name": "Jane Doe"}))
        .await;
    assert_eq!(code(&out), ErrorCode::DependencyUnavailable);
    h.records = None;
    let out = h
        .run::<ScreenEntity>("agent-1", json!({"name": "Jane Doe"}))
        .await;
    assert_eq!(code(&out), ErrorCode::DependencyUnavailable);
}

#[tokio::test(start_paused = true)]
async fn without_records_a_result_cannot_be_read() {
    let mut h = Harness::new();
    let item = ScreeningItem::new(
        "scr_01JABCDEFGHJKMNPQRSTVWXYZ0".to_owned(),
        ScreenRequest {
            name: "Jane Doe".to_owned(),
            country: None,
            date_of_birth: None,
        },
        ScreeningState::Pending,
        0,
    );
    h.records = None;
    let args = json!({"screening_id": item.id});
    let out = h.run::<GetScreeningResult>("agent-1", args).await;
    assert_eq!(code(&out), ErrorCode::DependencyUnavailable);
}
