//! Tokens never reach logs (SPEC §12): failing and succeeding verifications at TRACE level,
//! with every log line captured, must not contain the token or any of its segments. Each
//! rejection logs its reason, so the capture is known to work.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::sync::Arc;

use common::*;
use parking_lot::Mutex;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn modified(change: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut claims = claims();
    change(&mut claims);
    sign(&claims)
}

#[tokio::test]
async fn tokens_never_appear_in_logs_and_reasons_do() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let valid = valid_token();
    let parts: Vec<&str> = valid.split('.').collect();
    let tampered = format!("{}.{}.{}", parts[0], b64(b"{\"sub\":\"x\"}"), parts[2]);
    let cases: Vec<(String, &str)> = vec![
        (modified(|c| c["exp"] = (now() - 3600).into()), "expired"),
        (
            modified(|c| c["nbf"] = (now() + 3600).into()),
            "not_yet_valid",
        ),
        (
            modified(|c| c["iss"] = "https://evil.example".into()),
            "wrong_issuer",
        ),
        (
            modified(|c| c["token_use"] = "id".into()),
            "not_an_access_token",
        ),
        (
            modified(|c| c["client_id"] = "intruder".into()),
            "client_not_allowed",
        ),
        (tampered, "bad_signature"),
        (
            kosha_auth::dev::sign_claims(&keys().private_pem, "nope", &claims()).unwrap(),
            "unknown_kid",
        ),
        (
            format!(
                "{}.{}.{}",
                b64(b"{\"alg\":\"HS256\",\"kid\":\"k\"}"),
                parts[1],
                parts[2]
            ),
            "algorithm_not_allowed",
        ),
        (
            format!("{}.{}", valid, "x".repeat(17 * 1024)).replace("..", "."),
            "oversized_token",
        ),
    ];
    let (verifier, _) = serving_verifier();
    let mut tokens = vec![valid.clone()];
    assert!(verifier.verify(Some(&bearer(&valid))).await.is_ok());
    for (token, reason) in &cases {
        assert!(
            verifier.verify(Some(&bearer(token))).await.is_err(),
            "{reason}"
        );
        let logs = String::from_utf8_lossy(&capture.0.lock()).into_owned();
        assert!(
            logs.contains(&format!("reason=\"{reason}\"")),
            "no {reason} in logs:\n{logs}"
        );
        tokens.push(token.clone());
    }
    let no_role = modified(|c| {
        c.as_object_mut().unwrap().remove("cognito:groups");
    });
    assert!(verifier.verify(Some(&bearer(&no_role))).await.is_err());
    tokens.push(no_role);

    let logs = String::from_utf8_lossy(&capture.0.lock()).into_owned();
    assert!(!logs.is_empty());
    for token in &tokens {
        for segment in token.split('.').filter(|s| s.len() >= 16) {
            assert!(
                !logs.contains(segment),
                "a token segment reached the logs:\n{logs}"
            );
        }
    }
}
