//! The chaos key from Secrets Manager in the emulator: format and caching.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
mod common;

use common::{sdk_config, unique};
use kosha_state::test_support::CallCounter;
use kosha_state::{SecretCache, StateError};

fn counted(sdk: &aws_config::SdkConfig, counter: &CallCounter) -> aws_sdk_secretsmanager::Client {
    let conf = aws_sdk_secretsmanager::config::Builder::from(sdk)
        .interceptor(counter.clone())
        .build();
    aws_sdk_secretsmanager::Client::from_conf(conf)
}

#[tokio::test]
async fn reads_the_hex_key_once_and_serves_it_from_the_cache() {
    let sdk = sdk_config().await;
    let id = unique("kosha/chaos-test");
    let hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(&id)
        .secret_string(hex)
        .send()
        .await
        .unwrap();
    let counter = CallCounter::default();
    let cache = SecretCache::new(counted(&sdk, &counter), &id);
    let key = cache.get().await.unwrap();
    assert_eq!(key.as_bytes().len(), 32);
    assert_eq!(key.as_bytes()[15], 0xff);
    for _ in 0..5 {
        assert_eq!(cache.get().await.unwrap(), key);
    }
    assert_eq!(
        counter.get(),
        1,
        "one GetSecretValue within the 5-minute TTL"
    );
}

#[tokio::test]
async fn a_malformed_or_missing_secret_is_an_error_without_the_value() {
    let sdk = sdk_config().await;
    let id = unique("kosha/chaos-test");
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name(&id)
        .secret_string("hunter2-not-hex")
        .send()
        .await
        .unwrap();
    // The gateway's own way: the client built from the SDK config on the first fetch.
    let cache = SecretCache::from_sdk(&sdk, &id);
    let err = cache.get().await.unwrap_err();
    assert!(matches!(err, StateError::MalformedSecret { .. }), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");

    let missing = SecretCache::new(aws_sdk_secretsmanager::Client::new(&sdk), unique("nope"));
    assert!(matches!(missing.get().await, Err(StateError::Aws { .. })));
}
