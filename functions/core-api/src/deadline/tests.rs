use std::time::Duration;

use axum::http::HeaderValue;
use time::macros::datetime;

use super::{Budget, Deadline, MARGIN, MAX_AHEAD, remaining};
use crate::error::ApiError;

fn header(s: &str) -> HeaderValue {
    HeaderValue::from_str(s).unwrap()
}

#[test]
fn absent_header_means_no_deadline() {
    assert_eq!(remaining(None, datetime!(2026-11-30 12:00 UTC)), Ok(None));
}

#[test]
fn measures_time_left_with_milliseconds() {
    let now = datetime!(2026-11-30 12:00:00 UTC);
    let left = remaining(Some(&header("2026-11-30T12:00:07.850Z")), now).unwrap();
    assert_eq!(left, Some(Duration::from_millis(7_850)));
}

#[test]
fn clamps_to_sixty_seconds() {
    let now = datetime!(2026-11-30 12:00:00 UTC);
    let left = remaining(Some(&header("2026-11-30T13:00:00Z")), now).unwrap();
    assert_eq!(left, Some(MAX_AHEAD));
}

#[test]
fn past_or_present_deadline_is_exceeded() {
    let now = datetime!(2026-11-30 12:00:00 UTC);
    for past in ["2026-11-30T11:59:59.999Z", "2026-11-30T12:00:00Z"] {
        assert_eq!(
            remaining(Some(&header(past)), now),
            Err(ApiError::DeadlineExceeded)
        );
    }
}

#[test]
fn malformed_header_names_itself() {
    let now = datetime!(2026-11-30 12:00:00 UTC);
    for bad in ["tomorrow", "2026-11-30", "1700000000", ""] {
        let err = remaining(Some(&header(bad)), now).unwrap_err();
        assert!(err.to_string().contains("X-Request-Deadline"), "{bad}");
    }
}

#[tokio::test(start_paused = true)]
async fn statement_timeout_shrinks_with_the_deadline() {
    let cap = Duration::from_secs(3);
    let deadline = Deadline::after(Duration::from_secs(5));
    let budget = Budget {
        deadline: Some(deadline),
        cap,
    };
    assert_eq!(budget.statement_timeout(), Some(cap));
    tokio::time::advance(Duration::from_millis(4_000)).await;
    assert_eq!(budget.statement_timeout(), Some(Duration::from_millis(900)));
    tokio::time::advance(Duration::from_millis(1_000) - MARGIN).await;
    assert_eq!(budget.statement_timeout(), None);
    let unbounded = Budget {
        deadline: None,
        cap,
    };
    assert_eq!(unbounded.statement_timeout(), Some(cap));
}
