//! HMAC keys from Secrets Manager in the emulator: format, caching, one client for several
//! secrets.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers
mod common;

use common::{sdk_config, unique};
use kosha_state::test_support::CallCounter;
use kosha_state::{SecretCache, SecretsClient, StateError};

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

#[tokio::test]
async fn two_secrets_read_through_one_client_built_on_the_first_fetch() {
    let sdk = sdk_config().await;
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    let (chaos, confirm) = (unique("kosha/chaos-test"), unique("kosha/confirm-test"));
    for (id, byte) in [(&chaos, "11"), (&confirm, "22")] {
        secrets
            .create_secret()
            .name(id)
            .secret_string(byte.repeat(32))
            .send()
            .await
            .unwrap();
    }
    // The gateway's way: one client, a cache per secret.
    let client = SecretsClient::from_sdk(&sdk);
    let (a, b) = (client.cache(&chaos), client.cache(&confirm));
    assert!(!client.is_built(), "nothing is built before a fetch");
    assert_eq!(a.get().await.unwrap().as_bytes(), [0x11; 32]);
    assert!(client.is_built());
    assert_eq!(b.get().await.unwrap().as_bytes(), [0x22; 32]);
    assert_eq!(
        (a.secret_id(), b.secret_id()),
        (chaos.as_str(), confirm.as_str())
    );
}
