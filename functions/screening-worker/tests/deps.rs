//! The worker's real screening-sim adapter ([`PolicySim`]): the HTTP client under the worker's
//! policy, against a stand-in screening-sim (wiremock).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kosha_clients::screening::ScreeningClient;
use kosha_contract::screening::{ScreenRequest, ScreenResponse, ScreenStatus};
use kosha_resilience::config::PolicyConfig;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::policy::Policy;
use screening_worker::deps::{PROFILE, PolicySim};
use screening_worker::handler::{Sim, SimAnswer};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn sim(server: &MockServer) -> PolicySim {
    let policy = Policy::try_new(
        kosha_contract::dependency::Dependency::ScreeningSim,
        PolicyConfig::from_profile(PROFILE),
        Arc::new(NoOverrides),
    )
    .unwrap();
    PolicySim {
        client: ScreeningClient::new(&server.uri(), reqwest::Client::new()),
        policy,
    }
}

#[tokio::test]
async fn the_hop_deadline_is_the_attempts_end_not_the_batchs() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/screen"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "status": "clear",
            "matches": []
        })))
        .mount(&server)
        .await;
    // A batch with 30 s left; the attempt is capped at PROFILE's 1.5 s.
    let answer = sim(&server)
        .screen(
            &ScreenRequest::new("Hiroshi Tanaka", Some("JP"), None),
            &Deadline::after(Duration::from_secs(30)),
        )
        .await;
    assert_eq!(
        answer,
        SimAnswer::Result(ScreenResponse {
            status: ScreenStatus::Clear,
            matches: vec![],
        })
    );
    let received = server.received_requests().await.unwrap();
    let header = received[0]
        .headers
        .get("x-request-deadline")
        .unwrap()
        .to_str()
        .unwrap();
    let sent = Deadline::parse_header(header).unwrap();
    // SPEC §7: min(deadline, attempt end) − 150 ms = at most 1.35 s from now (the batch's
    // deadline − 150 ms would be 29.85 s).
    assert!(
        sent.remaining() <= PROFILE.attempt_cap - Duration::from_millis(150),
        "{header} leaves {:?}",
        sent.remaining()
    );
}

#[tokio::test]
async fn a_refused_request_is_invalid_with_screening_sims_message() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/screen"))
        .respond_with(
            ResponseTemplate::new(400).set_body_json(serde_json::json!({
                "error": {"code": "invalid_argument", "message": "country must be an assigned ISO 3166-1 alpha-2 code"}
            })),
        )
        .expect(1)
        .mount(&server)
        .await;
    let answer = sim(&server)
        .screen(
            &ScreenRequest::new("Hiroshi Tanaka", Some("UK"), None),
            &Deadline::after(Duration::from_secs(30)),
        )
        .await;
    assert_eq!(
        answer,
        SimAnswer::Invalid("country must be an assigned ISO 3166-1 alpha-2 code".to_owned())
    );
}

#[tokio::test]
async fn an_outage_is_unavailable_after_the_policys_attempts() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/screen"))
        .respond_with(ResponseTemplate::new(503))
        .expect(u64::from(PROFILE.max_attempts))
        .mount(&server)
        .await;
    let answer = sim(&server)
        .screen(
            &ScreenRequest::new("Hiroshi Tanaka", None, None),
            &Deadline::after(Duration::from_secs(30)),
        )
        .await;
    assert!(
        matches!(answer, SimAnswer::Unavailable { .. }),
        "{answer:?}"
    );
}
