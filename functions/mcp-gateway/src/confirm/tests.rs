//! The confirmation flow end to end inside the gateway (SPEC §5b): the question, every kind of
//! answer, expiry on a clock set by hand, forged and rebound states, clients that cannot be
//! asked, and a key that cannot be read.

use std::sync::Arc;

use kosha_auth::Role;
use kosha_resilience::rate_limit::BoxFuture;
use kosha_state::{HmacKey, ManualClock, SecretFetcher, StateError, decode_hmac_key};
use serde_json::{Value, json};

use super::question::QUESTION_KEY;
use super::*;

const TTL: Duration = Duration::from_secs(600);
const T0: i64 = 1_800_000_000_000;
const WITHIN: Duration = Duration::from_secs(1);

struct Fixed(&'static str);
impl SecretFetcher for Fixed {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        Box::pin(async move { Ok(decode_hmac_key(self.0).unwrap()) })
    }
}

struct Down;
impl SecretFetcher for Down {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        Box::pin(async {
            Err(StateError::Aws {
                operation: "GetSecretValue",
                message: "down".into(),
            })
        })
    }
}

fn keys(fetcher: impl SecretFetcher) -> SecretCache {
    SecretCache::with_fetcher(Arc::new(fetcher), "kosha/confirm-hmac-key", TTL)
}

const KEY_HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

fn confirmer(clock: &Arc<ManualClock>) -> Confirmer {
    Confirmer::new(Some(keys(Fixed(KEY_HEX))), TTL, clock.clone())
}

fn person(sub: &str) -> Principal {
    Principal {
        client_id: "app".into(),
        subject: sub.into(),
        username: Some(format!("{sub}@example.com")),
        roles: vec![Role::Agent],
        scopes: vec![],
        groups: vec![],
        tags: Default::default(),
        expires_at: 0,
    }
}

fn machine() -> Principal {
    Principal {
        client_id: "app".into(),
        subject: "app".into(),
        username: None,
        roles: vec![Role::Agent],
        scopes: vec![],
        groups: vec![],
        tags: Default::default(),
        expires_at: 0,
    }
}

fn client(version: &str, capabilities: Value) -> Client {
    Client {
        protocol: Some(serde_json::from_value(json!(version)).unwrap()),
        capabilities: Some(serde_json::from_value(capabilities).unwrap()),
    }
}

fn modern() -> Client {
    client("2026-07-28", json!({"elicitation": {"form": {}}}))
}

fn dispute() -> JsonObject {
    json!({"transaction_id": "txn_000341", "reason": "charged twice"})
        .as_object()
        .unwrap()
        .clone()
}

const RECORD: Record<'static> = Record {
    transaction_id: "txn_000341",
    account_id: "acc_0012",
    amount_minor: 81_240,
    currency: "EUR",
};

fn responses(v: Value) -> InputResponses {
    serde_json::from_value(json!({ QUESTION_KEY: v })).unwrap()
}

fn accept() -> InputResponses {
    responses(json!({"action": "accept", "content": {"confirm": true, "note": "yes, twice"}}))
}

/// One call of `tool` with `arguments` by `principal` through `client`, with `reply`.
async fn decide(
    c: &Confirmer,
    principal: &Principal,
    client: &Client,
    arguments: &JsonObject,
    reply: Reply<'_>,
) -> Step {
    let pending = Pending {
        tool: "raise_dispute",
        arguments,
        record: RECORD,
        principal,
        client,
        reply,
    };
    c.decide(&pending, WITHIN).await
}

/// The state and message of an `Ask`.
fn asked(step: Step) -> (String, String) {
    let Step::Ask(result) = step else {
        panic!("expected a question, got {step:?}");
    };
    let v = serde_json::to_value(&result).unwrap();
    let message = v["inputRequests"][QUESTION_KEY]["params"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    (result.request_state.unwrap(), message)
}

fn refusal(step: Step) -> ToolError {
    match step {
        Step::Refuse(e) => e,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn the_first_round_asks_and_a_yes_on_the_retry_runs_the_call() {
    let clock = Arc::new(ManualClock::new(T0));
    let c = confirmer(&clock);
    let alice = person("alice");
    let args = dispute();
    let (state, message) = asked(decide(&c, &alice, &modern(), &args, Reply::default()).await);
    assert_eq!(
        message,
        "Raise a dispute of 812.40 EUR on txn_000341 (acc_0012), reason: “charged twice”?"
    );
    clock.advance_ms(30_000);
    let yes = accept();
    let reply = Reply {
        request_state: Some(&state),
        input_responses: Some(&yes),
    };
    let step = decide(&c, &alice, &modern(), &args, reply).await;
    let Step::Run(confirmed) = step else {
        panic!("expected a run, got {step:?}");
    };
    assert_eq!(confirmed.note.as_deref(), Some("yes, twice"));
    // The same accepted state again runs again: the write's idempotency answers the first
    // result (SPEC §4), so nothing is written twice.
    assert!(matches!(
        decide(&c, &alice, &modern(), &args, reply).await,
        Step::Run(_)
    ));
}

#[tokio::test(start_paused = true)]
async fn a_no_a_dismissal_or_confirm_false_is_declined() {
    let clock = Arc::new(ManualClock::new(T0));
    let c = confirmer(&clock);
    let alice = person("alice");
    let args = dispute();
    let (state, _) = asked(decide(&c, &alice, &modern(), &args, Reply::default()).await);
    for answer in [
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
        json!({"action": "accept", "content": {"confirm": false}}),
    ] {
        let r = responses(answer.clone());
        let reply = Reply {
            request_state: Some(&state),
            input_responses: Some(&r),
        };
        let e = refusal(decide(&c, &alice, &modern(), &args, reply).await);
        assert_eq!(e, ToolError::Declined, "{answer}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_expired_state_asks_again_with_a_new_state_even_with_a_yes() {
    let clock = Arc::new(ManualClock::new(T0));
    let c = confirmer(&clock);
    let alice = person("alice");
    let args = dispute();
    let (state, first) = asked(decide(&c, &alice, &modern(), &args, Reply::default()).await);
    clock.advance_ms(600_001);
    let yes = accept();
    let reply = Reply {
        request_state: Some(&state),
        input_responses: Some(&yes),
    };
    let (again, message) = asked(decide(&c, &alice, &modern(), &args, reply).await);
    assert_ne!(again, state);
    assert_eq!(message, first);
    // The new state is good for a new TTL.
    let reply = Reply {
        request_state: Some(&again),
        input_responses: Some(&yes),
    };
    assert!(matches!(
        decide(&c, &alice, &modern(), &args, reply).await,
        Step::Run(_)
    ));
}

fn retry<'a>(state: &'a str, answers: &'a InputResponses) -> Reply<'a> {
    Reply {
        request_state: Some(state),
        input_responses: Some(answers),
    }
}

fn invalid_state(e: &ToolError) -> bool {
    matches!(e, ToolError::InvalidArgument { field, .. } if field == "requestState")
}

#[tokio::test(start_paused = true)]
async fn a_forged_state_or_one_for_another_user_client_or_arguments_is_invalid_argument() {
    let clock = Arc::new(ManualClock::new(T0));
    let c = confirmer(&clock);
    let alice = person("alice");
    let args = dispute();
    let (state, _) = asked(decide(&c, &alice, &modern(), &args, Reply::default()).await);
    let yes = accept();
    // Another user of the same app client.
    let e = refusal(decide(&c, &person("bob"), &modern(), &args, retry(&state, &yes)).await);
    assert!(invalid_state(&e), "{e:?}");
    // Another app client, same user id.
    let elsewhere = Principal {
        client_id: "other-app".into(),
        ..person("alice")
    };
    let e = refusal(decide(&c, &elsewhere, &modern(), &args, retry(&state, &yes)).await);
    assert!(invalid_state(&e), "{e:?}");
    // Other arguments.
    let mut more = args.clone();
    more.insert("amount_minor".into(), json!(100));
    let e = refusal(decide(&c, &alice, &modern(), &more, retry(&state, &yes)).await);
    assert!(invalid_state(&e), "{e:?}");
    // Tampered, and not a state at all.
    let tampered = format!("{state}x");
    for s in [tampered.as_str(), "rs1.bm90.aGk", "please run it"] {
        let e = refusal(decide(&c, &alice, &modern(), &args, retry(s, &yes)).await);
        assert!(invalid_state(&e), "{s}: {e:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_state_sealed_under_another_key_is_invalid_argument() {
    let clock = Arc::new(ManualClock::new(T0));
    let theirs = Confirmer::new(
        Some(keys(Fixed(
            "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100",
        ))),
        TTL,
        clock.clone(),
    );
    let alice = person("alice");
    let args = dispute();
    let (state, _) = asked(decide(&theirs, &alice, &modern(), &args, Reply::default()).await);
    let yes = accept();
    let reply = Reply {
        request_state: Some(&state),
        input_responses: Some(&yes),
    };
    let e = refusal(decide(&confirmer(&clock), &alice, &modern(), &args, reply).await);
    assert!(matches!(e, ToolError::InvalidArgument { field, .. } if field == "requestState"));
}

#[tokio::test(start_paused = true)]
async fn a_valid_state_without_a_usable_answer_is_invalid_argument() {
    let clock = Arc::new(ManualClock::new(T0));
    let c = confirmer(&clock);
    let alice = person("alice");
    let args = dispute();
    let (state, _) = asked(decide(&c, &alice, &modern(), &args, Reply::default()).await);
    let reply = Reply {
        request_state: Some(&state),
        input_responses: None,
    };
    let e = refusal(decide(&c, &alice, &modern(), &args, reply).await);
    assert!(matches!(e, ToolError::InvalidArgument { field, .. } if field == "inputResponses"));
}

#[tokio::test(start_paused = true)]
async fn a_client_that_cannot_be_asked_gets_confirmation_required_state_or_not() {
    let clock = Arc::new(ManualClock::new(T0));
    let c = confirmer(&clock);
    let args = dispute();
    let (state, _) = asked(decide(&c, &person("alice"), &modern(), &args, Reply::default()).await);
    let yes = accept();
    let with_state = Reply {
        request_state: Some(&state),
        input_responses: Some(&yes),
    };
    let older = client("2025-11-25", json!({"elicitation": {"form": {}}}));
    let no_elicitation = client("2026-07-28", json!({}));
    for (who, through) in [
        (person("alice"), &older),
        (person("alice"), &no_elicitation),
        (machine(), &modern()),
    ] {
        for reply in [Reply::default(), with_state] {
            let e = refusal(decide(&c, &who, through, &args, reply).await);
            assert_eq!(e, ToolError::ConfirmationRequired, "{who:?} {through:?}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn without_a_usable_key_nothing_runs_and_the_caller_may_retry() {
    let clock = Arc::new(ManualClock::new(T0));
    let alice = person("alice");
    let args = dispute();
    let unavailable = ToolError::ConfirmUnavailable {
        retry_after_s: Some(30),
    };
    let none = Confirmer::new(None, TTL, clock.clone());
    let down = Confirmer::new(Some(keys(Down)), TTL, clock.clone());
    // 16 bytes: a valid chaos-style key, under the codec's 32-byte minimum.
    let short = Confirmer::new(
        Some(keys(Fixed("00112233445566778899aabbccddeeff"))),
        TTL,
        clock.clone(),
    );
    for c in [none, down, short] {
        let e = refusal(decide(&c, &alice, &modern(), &args, Reply::default()).await);
        assert_eq!(e, unavailable, "{c:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn only_write_tools_are_asked_about_and_their_arguments_are_checked() {
    let clock = Arc::new(ManualClock::new(T0));
    let c = confirmer(&clock);
    let alice = person("alice");
    let args = dispute();
    let pending = Pending {
        tool: "get_transaction",
        arguments: &args,
        record: RECORD,
        principal: &alice,
        client: &modern(),
        reply: Reply::default(),
    };
    assert_eq!(
        refusal(c.decide(&pending, WITHIN).await),
        ToolError::Internal
    );
    let no_reason = json!({"transaction_id": "txn_000341"})
        .as_object()
        .unwrap()
        .clone();
    let e = refusal(decide(&c, &alice, &modern(), &no_reason, Reply::default()).await);
    assert!(matches!(e, ToolError::InvalidArgument { field, .. } if field == "reason"));
}
