use std::time::Duration;

use super::*;
use crate::budget::BudgetConfig;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn config() -> RetryConfig {
    RetryConfig {
        max_attempts: 3,
        backoff: Backoff::try_new(ms(50), ms(200)).unwrap(),
        min_attempt: ms(100),
    }
}

fn budget(tokens: u32) -> RetryBudget {
    let b = RetryBudget::try_new(
        "dep",
        BudgetConfig {
            cap_tokens: 10,
            min_retries_per_sec: 0,
        },
    )
    .unwrap();
    for _ in 0..tokens * 10 {
        b.deposit();
    }
    b
}

const BIG: Duration = Duration::from_secs(10);
const MARGIN: Duration = Duration::from_millis(100);
const I: Idempotency = Idempotency::Idempotent;

fn status(status: u16) -> ErrorClass {
    ErrorClass::Status {
        status,
        retry_after: None,
    }
}

#[test]
fn validates_max_attempts() {
    let mut c = config();
    c.max_attempts = 0;
    assert!(c.validate().is_err());
    c.max_attempts = 11;
    assert!(c.validate().is_err());
}

#[tokio::test(start_paused = true)]
async fn retries_retryable_errors_within_backoff_bounds() {
    for class in [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        status(502),
        status(503),
        status(504),
        status(429),
    ] {
        let b = budget(2);
        let RetryDecision::RetryAfter(d) = config().decide(1, &class, I, BIG, MARGIN, &b) else {
            panic!("{class:?} should be retried");
        };
        assert!(d <= ms(50));
        let RetryDecision::RetryAfter(d) =
            config().decide(2, &class, Idempotency::Keyed, BIG, MARGIN, &b)
        else {
            panic!("{class:?} should be retried");
        };
        assert!(d <= ms(100));
    }
}

#[tokio::test(start_paused = true)]
async fn stops_without_spending_budget() {
    let b = budget(1);
    let c = config();
    let stop = |r| RetryDecision::Stop(r);
    assert_eq!(
        c.decide(1, &status(500), I, BIG, MARGIN, &b),
        stop(StopReason::NotRetryable)
    );
    assert_eq!(
        c.decide(1, &status(404), I, BIG, MARGIN, &b),
        stop(StopReason::NotRetryable)
    );
    assert_eq!(
        c.decide(1, &ErrorClass::Caller, I, BIG, MARGIN, &b),
        stop(StopReason::NotRetryable)
    );
    assert_eq!(
        c.decide(
            1,
            &ErrorClass::Timeout,
            Idempotency::NonIdempotent,
            BIG,
            MARGIN,
            &b
        ),
        stop(StopReason::NotIdempotent)
    );
    assert_eq!(
        c.decide(3, &ErrorClass::Timeout, I, BIG, MARGIN, &b),
        stop(StopReason::AttemptsExhausted)
    );
    assert_eq!(
        c.decide(1, &ErrorClass::Timeout, I, ms(199), MARGIN, &b),
        stop(StopReason::DeadlineTooClose)
    );
    assert_eq!(b.earned_milli(), 1_000, "no stop above spent a token");
    assert!(matches!(
        c.decide(1, &ErrorClass::Timeout, I, BIG, MARGIN, &b),
        RetryDecision::RetryAfter(_)
    ));
    assert_eq!(
        c.decide(1, &ErrorClass::Timeout, I, BIG, MARGIN, &b),
        stop(StopReason::BudgetExhausted)
    );
}

#[tokio::test(start_paused = true)]
async fn honours_retry_after_and_the_deadline_rule() {
    let b = budget(10);
    let c = config();
    let limited = ErrorClass::Status {
        status: 429,
        retry_after: Some(ms(1_500)),
    };
    assert_eq!(
        c.decide(1, &limited, I, BIG, MARGIN, &b),
        RetryDecision::RetryAfter(ms(1_500))
    );
    // 1.5 s wait + 100 ms margin + 100 ms minimum attempt = 1.7 s needed.
    assert_eq!(
        c.decide(1, &limited, I, ms(1_700), MARGIN, &b),
        RetryDecision::RetryAfter(ms(1_500))
    );
    assert_eq!(
        c.decide(1, &limited, I, ms(1_699), MARGIN, &b),
        RetryDecision::Stop(StopReason::DeadlineTooClose)
    );
}
