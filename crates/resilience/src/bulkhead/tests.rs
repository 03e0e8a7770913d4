use std::time::Duration;

use super::*;

fn bulkhead(capacity: usize, wait_ms: u64) -> Bulkhead {
    Bulkhead::try_new(
        "dep",
        BulkheadConfig {
            capacity,
            wait: Duration::from_millis(wait_ms),
        },
    )
    .unwrap()
}

#[test]
fn settings_are_validated() {
    let bad = |capacity, wait_ms| {
        Bulkhead::try_new(
            "dep",
            BulkheadConfig {
                capacity,
                wait: Duration::from_millis(wait_ms),
            },
        )
        .is_err()
    };
    assert!(bad(0, 0));
    assert!(bad(1, 51));
    assert!(!bad(1, 50));
}

#[tokio::test(start_paused = true)]
async fn full_bulkhead_fails_fast_and_reports_counts() {
    let b = bulkhead(2, 0);
    let p1 = b.acquire().await.unwrap();
    let _p2 = b.acquire().await.unwrap();
    assert_eq!((b.in_flight(), b.capacity()), (2, 2));
    assert_eq!(b.acquire().await.unwrap_err(), BulkheadFull);
    drop(p1);
    assert_eq!(b.in_flight(), 1);
    assert!(b.acquire().await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn waits_up_to_the_configured_wait() {
    let b = bulkhead(1, 20);
    let held = b.acquire().await.unwrap();
    let start = tokio::time::Instant::now();
    assert_eq!(b.acquire().await.unwrap_err(), BulkheadFull);
    assert_eq!(start.elapsed(), Duration::from_millis(20));

    // A permit freed within the wait is taken.
    let b2 = b.clone();
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(held);
    });
    let got = b2.acquire().await;
    assert!(got.is_ok());
    release.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn permit_returns_after_cancellation() {
    let b = bulkhead(1, 0);
    let b2 = b.clone();
    let task = tokio::spawn(async move {
        let _permit = b2.acquire().await.unwrap();
        std::future::pending::<()>().await;
    });
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(b.in_flight(), 1);
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(b.in_flight(), 0);
    assert!(b.acquire().await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn permit_returns_after_panic() {
    let b = bulkhead(1, 0);
    let b2 = b.clone();
    let task = tokio::spawn(async move {
        let _permit = b2.acquire().await.unwrap();
        panic!("the call panicked");
    });
    assert!(task.await.unwrap_err().is_panic());
    assert_eq!(b.in_flight(), 0);
    assert!(b.acquire().await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn cancelled_waiter_takes_nothing() {
    let b = bulkhead(1, 50);
    let held = b.acquire().await.unwrap();
    let waiter = b.acquire();
    drop(waiter);
    drop(held);
    assert_eq!(b.in_flight(), 0);
}
