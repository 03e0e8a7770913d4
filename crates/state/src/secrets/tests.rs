use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

struct Fake {
    calls: AtomicUsize,
    fail: bool,
}

impl SecretFetcher for Fake {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let fail = self.fail;
        Box::pin(async move {
            if fail {
                return Err(StateError::Timeout {
                    operation: "GetSecretValue",
                });
            }
            Ok(HmacKey(vec![n as u8; 32].into()))
        })
    }
}

fn cache(fail: bool) -> (Arc<Fake>, SecretCache) {
    let fake = Arc::new(Fake {
        calls: AtomicUsize::new(0),
        fail,
    });
    let cache = SecretCache::with_fetcher(fake.clone(), "kosha/chaos-hmac-key", CACHE_TTL);
    (fake, cache)
}

#[tokio::test(start_paused = true)]
async fn caches_for_five_minutes_then_fetches_again() {
    let (fake, cache) = cache(false);
    let first = cache.get().await.unwrap();
    tokio::time::advance(Duration::from_secs(299)).await;
    assert_eq!(cache.get().await.unwrap(), first);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 1);
    tokio::time::advance(Duration::from_secs(1)).await;
    let second = cache.get().await.unwrap();
    assert_ne!(second, first);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_share_one_fetch() {
    let (fake, cache) = cache(false);
    let (a, b, c) = tokio::join!(cache.get(), cache.get(), cache.get());
    assert_eq!(a.unwrap(), b.unwrap());
    assert!(c.is_ok());
    assert_eq!(fake.calls.load(Ordering::SeqCst), 1);
}

/// Issue #30: with Secrets Manager down, every request retried the fetch.
#[tokio::test(start_paused = true)]
async fn a_failure_is_remembered_for_thirty_seconds() {
    let (fake, cache) = cache(true);
    assert!(cache.get().await.is_err());
    tokio::time::advance(FAILURE_TTL - Duration::from_millis(1)).await;
    assert!(cache.get().await.is_err());
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        1,
        "not asked again within 30 s"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    assert!(cache.get().await.is_err());
    assert_eq!(
        fake.calls.load(Ordering::SeqCst),
        2,
        "asked again after 30 s"
    );
}

struct Hanging;

impl SecretFetcher for Hanging {
    fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(start_paused = true)]
async fn a_fetch_never_waits_past_the_callers_limit() {
    let cache = SecretCache::with_fetcher(Arc::new(Hanging), "kosha/chaos-hmac-key", CACHE_TTL);
    let started = Instant::now();
    let limit = Duration::from_millis(300);
    assert!(matches!(
        cache.get_within(limit).await,
        Err(StateError::Timeout { .. })
    ));
    assert_eq!(started.elapsed(), limit);
    // Cut short by the caller's own 300 ms: not remembered, the next caller asks again.
    let again = Instant::now();
    assert!(cache.get_within(limit).await.is_err());
    assert_eq!(again.elapsed(), limit);
    // No answer within the fetch's own 2 s cap: remembered, the next caller fails at once.
    let full = Instant::now();
    assert!(cache.get_within(Duration::from_secs(5)).await.is_err());
    assert_eq!(full.elapsed(), Duration::from_secs(2));
    let then = Instant::now();
    assert!(cache.get_within(limit).await.is_err());
    assert_eq!(then.elapsed(), Duration::ZERO);
}

/// The attack pass of 2026-12-03: one request with an 8 ms deadline turned chaos verification
/// off for 30 s, though Secrets Manager was fine.
#[tokio::test(start_paused = true)]
async fn a_fetch_cut_short_by_one_caller_does_not_fail_the_next() {
    struct Slow;
    impl SecretFetcher for Slow {
        fn fetch(&self) -> BoxFuture<'_, Result<HmacKey, StateError>> {
            Box::pin(async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok(HmacKey(vec![7; 32].into()))
            })
        }
    }
    let cache = SecretCache::with_fetcher(Arc::new(Slow), "kosha/chaos-hmac-key", CACHE_TTL);
    assert!(matches!(
        cache.get_within(Duration::from_millis(8)).await,
        Err(StateError::Timeout { .. })
    ));
    assert!(cache.get_within(Duration::from_millis(500)).await.is_ok());
}

#[test]
fn hex_secret_strings_decode_to_bytes() {
    let hex64 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    let key = decode_hmac_key(&format!(" {hex64}\n")).unwrap();
    assert_eq!(key.as_bytes().len(), 32);
    assert_eq!(key.as_bytes()[1], 0x11);
    assert_eq!(decode_hmac_key("zz"), Err("not a hex string"));
    assert_eq!(decode_hmac_key("0011"), Err("shorter than 16 bytes"));
}

#[test]
fn debug_output_never_shows_the_key() {
    let key = decode_hmac_key("abababababababababababababababababababab").unwrap();
    let shown = format!("{key:?}");
    assert!(!shown.contains("ab"), "{shown}");
    let (_, cache) = cache(false);
    assert!(format!("{cache:?}").contains("<redacted>"));
}
