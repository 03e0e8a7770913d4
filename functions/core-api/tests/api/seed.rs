//! Migrations and seed: idempotent and deterministic.

use std::process::Output;

use core_api::db::{migrate, seed};

use crate::common::TestDb;

#[tokio::test]
async fn migrate_twice_changes_nothing() {
    let db = TestDb::empty().await;
    let mut client = db.client().await;
    let first = migrate::migrate_and_seed(&mut client)
        .await
        .expect("first run");
    assert_eq!(first.applied.len(), 6, "{:?}", first.applied);
    assert_eq!(first.version, Some(11));
    assert_eq!(first.seeded.accounts, 50);
    assert_eq!(first.seeded.transactions, 5_000);
    assert_eq!(first.seeded.articles, 40);
    let before = db.checksum().await;
    let second = migrate::migrate_and_seed(&mut client)
        .await
        .expect("second run");
    assert!(second.applied.is_empty());
    assert_eq!(second.version, Some(11));
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

/// `core-api migrate` / `seed --check` as an operator runs them: the last stdout line says
/// what the run did, also when it had nothing to do.
#[tokio::test]
async fn migrate_and_seed_check_commands_say_what_they_did() {
    let db = TestDb::empty().await;
    let run = |args: &'static [&'static str]| {
        let url = db.url.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                std::process::Command::new(env!("CARGO_BIN_EXE_core-api"))
                    .args(args)
                    .env("DATABASE_URL", url)
                    .env_remove("DATABASE_URL_SECRET_ARN")
                    .output()
                    .unwrap()
            })
            .await
            .unwrap()
        }
    };
    let last_line = |o: &Output| {
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out.lines().last().unwrap_or_default().to_owned()
    };
    let migrate: &[&str] = &["migrate"];
    let check: &[&str] = &["seed", "--check"];

    let first = last_line(&run(migrate).await);
    assert_eq!(
        first,
        "core-api migrate: schema: applied 6 migrations (V1__schemas, V2__knowledge_base, \
         V3__ops, V4__writes, V10__passages, V11__users), now at V11; seed: inserted 50 accounts, 5000 \
         transactions, 40 articles"
    );
    let again = last_line(&run(migrate).await);
    assert_eq!(
        again,
        "core-api migrate: schema: already up to date at V11; \
         seed: already present (50 accounts, 5000 transactions, 40 articles)"
    );

    db.client()
        .await
        .execute("DELETE FROM kb.articles WHERE article_id = 'kb_040'", &[])
        .await
        .unwrap();
    let missing = run(check).await;
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("found 50 accounts, 5000 transactions, 39 articles"),
        "{stderr}"
    );

    let repair = last_line(&run(migrate).await);
    assert!(
        repair.ends_with(
            "seed: inserted 0 accounts, 0 transactions, 1 articles (the rest were present)"
        ),
        "{repair}"
    );
    assert_eq!(
        last_line(&run(check).await),
        "core-api seed --check: seed present (50 accounts, 5000 transactions, 40 articles)"
    );
}
