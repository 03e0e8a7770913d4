use std::time::Duration;

use time::OffsetDateTime;
use time::macros::datetime;

use super::*;

const NOW: OffsetDateTime = datetime!(2026-11-30 12:00:00.000 UTC);

#[tokio::test(start_paused = true)]
async fn header_round_trip_has_three_digits_and_z() {
    let d = Deadline::parse_header_at("2026-11-30T12:00:07.850Z", NOW).unwrap();
    assert_eq!(d.to_header(), "2026-11-30T12:00:07.850Z");
    assert_eq!(d.remaining(), Duration::from_millis(7_850));
}

#[tokio::test(start_paused = true)]
async fn header_truncates_to_milliseconds() {
    let d = Deadline::parse_header_at("2026-11-30T12:00:01.123987Z", NOW).unwrap();
    assert_eq!(d.to_header(), "2026-11-30T12:00:01.123Z");
}

#[tokio::test(start_paused = true)]
async fn header_with_offset_is_reencoded_in_utc() {
    let d = Deadline::parse_header_at("2026-11-30T13:00:02+01:00", NOW).unwrap();
    assert_eq!(d.to_header(), "2026-11-30T12:00:02.000Z");
}

#[tokio::test(start_paused = true)]
async fn past_header_is_expired() {
    assert_eq!(
        Deadline::parse_header_at("2026-11-30T11:59:59.999Z", NOW),
        Err(DeadlineError::Expired)
    );
    assert_eq!(
        Deadline::parse_header_at("2026-11-30T12:00:00.000Z", NOW),
        Err(DeadlineError::Expired)
    );
}

#[tokio::test(start_paused = true)]
async fn malformed_headers_are_rejected() {
    for bad in [
        "",
        "soon",
        "2026-11-30 12:00:07",
        "2026-13-30T12:00:07.850Z",
        "1700000000",
    ] {
        assert_eq!(
            Deadline::parse_header_at(bad, NOW),
            Err(DeadlineError::Malformed),
            "{bad}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn far_future_header_is_clamped_to_60_s() {
    let d = Deadline::parse_header_at("2026-11-30T13:00:00.000Z", NOW).unwrap();
    assert_eq!(d.remaining(), MAX_AHEAD);
    assert_eq!(d.to_header(), "2026-11-30T12:01:00.000Z");
}

#[tokio::test(start_paused = true)]
async fn remaining_runs_down_on_tokio_clock() {
    let d = Deadline::after(Duration::from_millis(500));
    tokio::time::advance(Duration::from_millis(200)).await;
    assert_eq!(d.remaining(), Duration::from_millis(300));
    assert!(!d.is_expired());
    tokio::time::advance(Duration::from_millis(300)).await;
    assert!(d.is_expired());
    assert_eq!(d.remaining(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn child_is_earlier_by_the_margin_in_both_views() {
    let d = Deadline::parse_header_at("2026-11-30T12:00:08.000Z", NOW).unwrap();
    let c = d.child(Duration::from_millis(150));
    assert_eq!(c.remaining(), Duration::from_millis(7_850));
    assert_eq!(c.to_header(), "2026-11-30T12:00:07.850Z");
    assert_eq!(d.min(c), c);
    assert_eq!(c.min(d), c);
}

#[tokio::test(start_paused = true)]
async fn lambda_deadline_bounds_the_budget() {
    let now_ms = u64::try_from(NOW.unix_timestamp()).unwrap() * 1000;
    // Lambda has 3 s left; the tool budget is 8 s: 3 s − 50 ms wins.
    let d = Deadline::from_lambda_deadline_ms_at(
        now_ms + 3_000,
        Duration::from_secs(8),
        LAMBDA_RESPONSE_MARGIN,
        NOW,
    );
    assert_eq!(d.remaining(), Duration::from_millis(2_950));
    assert_eq!(d.to_header(), "2026-11-30T12:00:02.950Z");
    // Lambda has 900 s left: the budget wins.
    let d = Deadline::from_lambda_deadline_ms_at(
        now_ms + 900_000,
        Duration::from_secs(8),
        LAMBDA_RESPONSE_MARGIN,
        NOW,
    );
    assert_eq!(d.remaining(), Duration::from_secs(8));
    // Lambda deadline already past: expired, not a panic.
    let d = Deadline::from_lambda_deadline_ms_at(
        now_ms - 10,
        Duration::from_secs(8),
        LAMBDA_RESPONSE_MARGIN,
        NOW,
    );
    assert!(d.is_expired());
}
