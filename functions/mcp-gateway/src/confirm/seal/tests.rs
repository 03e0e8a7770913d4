//! The sealed state's classification: valid, expired, invalid (SPEC §5b), on a clock set by
//! hand (`kosha_state::ManualClock`).

use base64::Engine as _;
use kosha_state::{Clock, ManualClock};
use serde_json::json;

use super::*;

const KEY: [u8; 32] = [7; 32];
const OTHER_KEY: [u8; 32] = [8; 32];
const TTL: Duration = Duration::from_secs(600);
const T0: i64 = 1_800_000_000_000;

fn args(v: Value) -> JsonObject {
    v.as_object().unwrap().clone()
}

fn dispute() -> JsonObject {
    args(json!({"transaction_id": "txn_000341", "reason": "charged twice"}))
}

fn binding<'a>(arguments: &'a JsonObject) -> Binding<'a> {
    Binding {
        client_id: "app",
        user: "user-1",
        tool: "raise_dispute",
        arguments,
    }
}

fn sealer() -> Sealer {
    Sealer::try_new(&KEY, TTL).unwrap()
}

#[test]
fn a_state_opens_valid_for_its_binding_until_its_expiry_then_expired() {
    let clock = ManualClock::new(T0);
    let a = dispute();
    let s = sealer();
    let state = s.seal(&binding(&a), clock.now_ms());
    assert!(state.starts_with("rs1."), "{state}");
    assert_eq!(state.len(), 95, "{state}");
    assert_eq!(s.open(&state, &binding(&a), clock.now_ms()), Opened::Valid);
    clock.advance_ms(599_999);
    assert_eq!(s.open(&state, &binding(&a), clock.now_ms()), Opened::Valid);
    clock.advance_ms(1);
    assert_eq!(s.open(&state, &binding(&a), clock.now_ms()), Opened::Valid);
    clock.advance_ms(1);
    assert_eq!(
        s.open(&state, &binding(&a), clock.now_ms()),
        Opened::Expired
    );
}

#[test]
fn the_ttl_is_the_sealers() {
    let a = dispute();
    let short = Sealer::try_new(&KEY, Duration::from_secs(2)).unwrap();
    let state = short.seal(&binding(&a), T0);
    assert_eq!(short.open(&state, &binding(&a), T0 + 2_000), Opened::Valid);
    assert_eq!(
        short.open(&state, &binding(&a), T0 + 2_001),
        Opened::Expired
    );
}

#[test]
fn the_same_arguments_in_another_key_order_or_spacing_open_valid() {
    let a = dispute();
    let state = sealer().seal(&binding(&a), T0);
    let reordered: JsonObject =
        serde_json::from_str(r#"{ "reason" : "charged twice", "transaction_id":"txn_000341" }"#)
            .unwrap();
    assert_eq!(
        sealer().open(&state, &binding(&reordered), T0),
        Opened::Valid
    );
}

#[test]
fn another_client_user_tool_or_arguments_is_invalid_even_when_expired() {
    let a = dispute();
    let s = sealer();
    let state = s.seal(&binding(&a), T0);
    let unverified = Opened::Invalid(Invalid::Unverified);
    let other_client = Binding {
        client_id: "other-app",
        ..binding(&a)
    };
    let other_user = Binding {
        user: "user-2",
        ..binding(&a)
    };
    let other_tool = Binding {
        tool: "flag_transaction_for_review",
        ..binding(&a)
    };
    let changed =
        args(json!({"transaction_id": "txn_000341", "reason": "charged twice", "amount_minor": 1}));
    let later = T0 + 3_600_000;
    for b in [other_client, other_user, other_tool, binding(&changed)] {
        assert_eq!(s.open(&state, &b, T0), unverified, "{b:?}");
        assert_eq!(s.open(&state, &b, later), unverified, "{b:?}");
    }
}

#[test]
fn a_state_sealed_under_another_key_is_invalid() {
    let a = dispute();
    let foreign = Sealer::try_new(&OTHER_KEY, TTL)
        .unwrap()
        .seal(&binding(&a), T0);
    assert_eq!(
        sealer().open(&foreign, &binding(&a), T0),
        Opened::Invalid(Invalid::Unverified)
    );
}

#[test]
fn a_tampered_body_is_invalid_even_one_that_extends_its_own_expiry() {
    let a = dispute();
    let s = sealer();
    let state = s.seal(&binding(&a), T0);
    let parts: Vec<&str> = state.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut body = b64.decode(parts[1]).unwrap();
    // The codec's own expiry prefix (8 bytes, 0 = none) stays; ours follows in JSON.
    let text = String::from_utf8(body.split_off(8)).unwrap();
    let later = text.replace(
        &(T0 + 600_000).to_string(),
        &(T0 + 6_000_000_000).to_string(),
    );
    assert_ne!(later, text);
    body.extend_from_slice(later.as_bytes());
    let forged = format!("{}.{}.{}", parts[0], b64.encode(&body), parts[2]);
    assert_eq!(
        s.open(&forged, &binding(&a), T0 + 700_000),
        Opened::Invalid(Invalid::Unverified)
    );
    let mut flipped = state.clone();
    flipped.pop();
    flipped.push(if state.ends_with('A') { 'B' } else { 'A' });
    assert_eq!(
        s.open(&flipped, &binding(&a), T0),
        Opened::Invalid(Invalid::Unverified)
    );
}

#[test]
fn garbage_is_invalid_without_panicking() {
    let a = dispute();
    let s = sealer();
    for junk in [
        "",
        "rs1",
        "rs1..",
        "rs1.!!.??",
        "rs2.a.b.c",
        "xyz.abc.def",
        "rs1.e30.e30",
    ] {
        let opened = s.open(junk, &binding(&a), T0);
        assert!(matches!(opened, Opened::Invalid(_)), "{junk}: {opened:?}");
    }
    let huge = format!("rs1.{}.x", "A".repeat(MAX_STATE_BYTES));
    assert_eq!(
        s.open(&huge, &binding(&a), T0),
        Opened::Invalid(Invalid::TooLong)
    );
}

#[test]
fn a_verified_state_of_another_layout_is_invalid() {
    let a = dispute();
    let b = binding(&a);
    let codec = RequestStateCodec::try_new(KEY.to_vec()).unwrap();
    let ad = b.associated_data();
    let options = rmcp::model::SealOptions::new().associated_data(&ad);
    let other_version = codec.seal_with(br#"{"v":2,"exp":9000000000000}"#, &options);
    let not_json = codec.seal_with(b"step=2", &options);
    for state in [other_version, not_json] {
        assert_eq!(
            sealer().open(&state, &b, T0),
            Opened::Invalid(Invalid::UnknownBody)
        );
    }
}

#[test]
fn a_key_under_32_bytes_is_refused() {
    assert!(matches!(
        Sealer::try_new(&[1; 31], TTL),
        Err(RequestStateError::KeyTooShort { .. })
    ));
}

#[test]
fn the_digest_ignores_key_order_and_names_every_argument() {
    let a = dispute();
    let reordered = args(json!({"reason": "charged twice", "transaction_id": "txn_000341"}));
    assert_eq!(
        binding(&a).arguments_digest(),
        binding(&reordered).arguments_digest()
    );
    let changed = args(json!({"transaction_id": "txn_000341", "reason": "charged thrice"}));
    assert_ne!(
        binding(&a).arguments_digest(),
        binding(&changed).arguments_digest()
    );
    assert_eq!(binding(&a).arguments_digest().len(), 64);
}
