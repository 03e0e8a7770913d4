//! The gateway under an operator's Cedar policy set (SPEC §5a, issue 46): listing and calling
//! ask the same set, a call denied for its arguments or its record answers `forbidden` with
//! the policy's `@reason`, the record is read before deciding and its account is the one a
//! policy sees, and a file that does not validate stops the start naming the policy and line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use kosha_auth::Role;
use serde_json::{Value, json};
use tower::ServiceExt;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::{json_body, machine_token, token, tool_error, tools_call, tools_list};

/// The built-in set with `extra` policies, as a file.
fn policy_file(extra: &str) -> tempfile_path::TempPath {
    tempfile_path::write(&format!("{}\n{extra}", kosha_authz::BUILTIN))
}

/// A minimal temporary file (no extra crate): removed on drop.
mod tempfile_path {
    use std::path::PathBuf;

    pub struct TempPath(pub PathBuf);

    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    pub fn write(text: &str) -> TempPath {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "kosha-policy-{}-{}.cedar",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, text).unwrap();
        TempPath(path)
    }
}

/// A core-api with two transactions: `txn_000001` on `acc_0001` (812.40 EUR) and `txn_000002`
/// on `acc_0002` (12.50 EUR).
async fn core_api() -> MockServer {
    let server = MockServer::start().await;
    for (id, account, amount) in [
        ("txn_000001", "acc_0001", 81240),
        ("txn_000002", "acc_0002", 1250),
    ] {
        Mock::given(method("GET"))
            .and(path(format!("/v1/transactions/{id}")))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(json!({"transaction": {
                "transaction_id": id, "account_id": account, "amount_minor": amount,
                "currency": "EUR", "merchant": "M", "category": "c", "status": "booked",
                "booked_at": "2026-03-04T10:15:00Z"}})),
            )
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/v1/accounts/acc_0001/transactions"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"transactions": [], "next_cursor": null})),
        )
        .mount(&server)
        .await;
    server
}

/// A gateway router over `core` with the policy file `file`.
fn app(core: &MockServer, file: &tempfile_path::TempPath) -> axum::Router {
    let mut config = common::config(&core.uri(), 16);
    config.policy_file = Some(file.0.clone());
    common::app_with(config, 1_000.0)
}

async fn call(app: &axum::Router, token: &str, tool: &str, args: Value) -> Value {
    let resp = app
        .clone()
        .oneshot(tools_call(1, token, tool, args))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    json_body(resp).await
}

async fn listed(app: &axum::Router, token: &str) -> Vec<String> {
    let body = json_body(app.clone().oneshot(tools_list(1, token)).await.unwrap()).await;
    body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

const ACCOUNTS: &str = r#"
@id("one-account")
@reason("this application may only touch account acc_0001")
forbid (principal, action in [Kosha::Action::"get_transaction", Kosha::Action::"raise_dispute", Kosha::Action::"flag_transaction_for_review"], resource)
when { principal.client_id == "agent-a" && context has record && context.record.account_id != "acc_0001" };

@id("one-account-lists")
@reason("this application may only touch account acc_0001")
forbid (principal, action == Kosha::Action::"list_transactions", resource)
when { principal.client_id == "agent-a" && context.input.account_id != "acc_0001" };
"#;

#[tokio::test]
async fn a_policy_on_the_record_sees_the_transactions_account_not_the_callers_word() {
    let core = core_api().await;
    let file = policy_file(ACCOUNTS);
    let app = app(&core, &file);
    let agent = token("agent-a", &[Role::Agent]);
    let ok = call(
        &app,
        &agent,
        "get_transaction",
        json!({"transaction_id": "txn_000001"}),
    )
    .await;
    assert_eq!(
        ok["result"]["structuredContent"]["transaction"]["account_id"], "acc_0001",
        "{ok}"
    );
    let other = call(
        &app,
        &agent,
        "get_transaction",
        json!({"transaction_id": "txn_000002"}),
    )
    .await;
    let error = tool_error(&other);
    assert_eq!(error["code"], "forbidden");
    assert_eq!(
        error["message"],
        "this application may only touch account acc_0001"
    );
    let listing = call(
        &app,
        &agent,
        "list_transactions",
        json!({"account_id": "acc_0002"}),
    )
    .await;
    assert_eq!(tool_error(&listing)["code"], "forbidden");
    let own = call(
        &app,
        &agent,
        "list_transactions",
        json!({"account_id": "acc_0001"}),
    )
    .await;
    assert_eq!(own["result"]["isError"], false, "{own}");
    // Another application is not bound by it.
    let b = token("agent-b", &[Role::Agent]);
    let theirs = call(
        &app,
        &b,
        "get_transaction",
        json!({"transaction_id": "txn_000002"}),
    )
    .await;
    assert_eq!(theirs["result"]["isError"], false, "{theirs}");
    // Every tool is still listed: some call of each is permitted.
    assert_eq!(listed(&app, &agent).await.len(), 8);
}

#[tokio::test]
async fn a_disputes_default_amount_is_the_one_the_policy_sees() {
    let core = core_api().await;
    let file = policy_file(
        r#"@id("cap") @reason("disputes over 500.00 EUR need a supervisor")
        forbid (principal, action == Kosha::Action::"raise_dispute", resource)
        when { context.input.amount_minor > 50000 };"#,
    );
    let app = app(&core, &file);
    let agent = token("agent-a", &[Role::Agent]);
    // No amount: the dispute would be for the whole 812.40 EUR.
    let body = call(
        &app,
        &agent,
        "raise_dispute",
        json!({"transaction_id": "txn_000001", "reason": "charged twice"}),
    )
    .await;
    let error = tool_error(&body);
    assert_eq!(error["code"], "forbidden", "{body}");
    assert_eq!(
        error["message"],
        "disputes over 500.00 EUR need a supervisor"
    );
    // An unknown transaction is not_found, read before deciding.
    let body = call(
        &app,
        &agent,
        "raise_dispute",
        json!({"transaction_id": "txn_999999", "reason": "x"}),
    )
    .await;
    assert_eq!(tool_error(&body)["code"], "not_found", "{body}");
    // Bad arguments are invalid_argument before any policy.
    let body = call(
        &app,
        &agent,
        "raise_dispute",
        json!({"transaction_id": "txn_000001", "reason": "x", "amount_minor": "lots"}),
    )
    .await;
    assert_eq!(tool_error(&body)["code"], "invalid_argument", "{body}");
}

#[tokio::test]
async fn a_tool_a_client_may_never_call_is_unlisted_and_unknown() {
    let core = core_api().await;
    let file = policy_file(
        r#"@id("read-only")
        forbid (principal, action in [Kosha::Action::"raise_dispute", Kosha::Action::"flag_transaction_for_review"], resource)
        when { principal.client_id == "agent-b" };"#,
    );
    let app = app(&core, &file);
    let reader = machine_token("agent-b", &["kosha/agent"]);
    let names = listed(&app, &reader).await;
    assert!(!names.contains(&"raise_dispute".to_owned()), "{names:?}");
    assert!(names.contains(&"get_transaction".to_owned()), "{names:?}");
    let resp = app
        .clone()
        .oneshot(tools_call(
            7,
            &reader,
            "raise_dispute",
            json!({"transaction_id": "txn_000001", "reason": "x"}),
        ))
        .await
        .unwrap();
    let body = json_body(resp).await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(body["error"]["message"], "unknown tool: raise_dispute");
    assert_eq!(body["id"], 7);
    // The other client still sees and calls it.
    let writer = token("agent-a", &[Role::Agent]);
    assert!(
        listed(&app, &writer)
            .await
            .contains(&"raise_dispute".to_owned())
    );
}

#[test]
fn a_policy_file_that_does_not_validate_stops_the_start_naming_policy_and_line() {
    let file = tempfile_path::write(
        "@id(\"ok\")\npermit (principal, action, resource);\n\n@id(\"typo\")\nforbid (principal, action == Kosha::Action::\"raise_dispute\", resource)\nwhen { context.input.amount > 5 };\n",
    );
    let (code, text) = common::start_binary_with("KOSHA_POLICY_FILE", file.0.to_str().unwrap());
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("KOSHA_POLICY_FILE"), "{text}");
    assert!(text.contains("policy typo at line 6"), "{text}");
    // A file that cannot be read stops it too.
    let (code, text) =
        common::start_binary_with("KOSHA_POLICY_FILE", "/nonexistent/policies.cedar");
    assert_eq!(code, Some(2), "{text}");
}
