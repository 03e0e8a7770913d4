//! Migrations and seed: idempotent and deterministic.

use core_api::db::{migrate, seed};

use crate::common::TestDb;

#[tokio::test]
async fn migrate_twice_changes_nothing() {
    let db = TestDb::empty().await;
    let mut client = db.client().await;
    let first = migrate::migrate_and_seed(&mut client)
        .await
        .expect("first run");
    assert_eq!(first.applied.len(), 3, "{:?}", first.applied);
    assert_eq!(first.seeded.accounts, 50);
    assert_eq!(first.seeded.transactions, 5_000);
    assert_eq!(first.seeded.articles, 40);
    let before = db.checksum().await;
    let second = migrate::migrate_and_seed(&mut client)
        .await
        .expect("second run");
    assert!(second.applied.is_empty());
    assert_eq!(
        (
            second.seeded.accounts,
            second.seeded.transactions,
            second.seeded.articles
        ),
        (0, 0, 0)
    );
    assert_eq!(db.checksum().await, before);
    assert!(seed::is_present(&client, &seed::generate()).await.unwrap());
}

#[tokio::test]
async fn two_databases_get_identical_seed_data() {
    let a = TestDb::seeded().await;
    let b = TestDb::seeded().await;
    assert_eq!(a.checksum().await, b.checksum().await);
}

#[tokio::test]
async fn seed_check_sees_missing_rows() {
    let db = TestDb::seeded().await;
    let client = db.client().await;
    client
        .execute("DELETE FROM kb.articles WHERE article_id = 'kb_040'", &[])
        .await
        .unwrap();
    assert!(!seed::is_present(&client, &seed::generate()).await.unwrap());
}
