use std::collections::{BTreeMap, BTreeSet};

use time::OffsetDateTime;
use time::macros::datetime;

use super::{SeedCounts, articles::ARTICLES, generate, ledger::BASE};

#[test]
fn counts_owners_and_dates_are_the_seeds() {
    let data = generate();
    assert_eq!(
        data.counts(),
        SeedCounts {
            accounts: 50,
            transactions: 5_000,
            articles: 40,
        }
    );
    let accounts: BTreeSet<&str> = data
        .accounts
        .iter()
        .map(|a| a.account_id.as_str())
        .collect();
    assert_eq!(accounts.len(), 50, "account ids are unique");
    let now = OffsetDateTime::now_utc();
    for a in &data.accounts {
        assert!(a.opened_at < BASE && a.opened_at < now, "{a:?}");
    }
    for t in &data.transactions {
        assert!(accounts.contains(t.account_id.as_str()), "{t:?}");
        assert!(t.booked_at < now, "{t:?}");
    }
}

#[test]
fn ids_are_the_stable_ids_of_spec_section_4() {
    let data = generate();
    assert_eq!(data.accounts.len(), 50);
    assert_eq!(data.accounts[0].account_id, "acc_0001");
    assert_eq!(data.accounts[49].account_id, "acc_0050");
    assert!(data.transactions.len() >= 5_000);
    for (i, t) in data.transactions.iter().enumerate() {
        assert_eq!(t.transaction_id, format!("txn_{:06}", i + 1));
    }
    assert_eq!(data.articles.len(), ARTICLES);
    assert_eq!(data.articles[0].article_id, "kb_001");
    assert_eq!(data.articles[39].article_id, "kb_040");
}

#[test]
fn every_account_has_at_least_twenty_transactions_in_the_fixed_past_period() {
    let data = generate();
    let mut per_account: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &data.transactions {
        *per_account.entry(t.account_id.as_str()).or_default() += 1;
        assert!(
            t.booked_at >= BASE && t.booked_at < datetime!(2026-11-01 00:00:00 UTC),
            "{t:?}"
        );
        assert!(t.amount_minor > 0);
        assert!(["booked", "pending", "reversed"].contains(&t.status));
    }
    assert_eq!(per_account.len(), 50);
    assert!(per_account.values().all(|&n| n >= 20));
}

#[test]
fn currencies_are_mostly_eur_usd_gbp_and_statuses_vary() {
    let data = generate();
    let major = data
        .transactions
        .iter()
        .filter(|t| ["EUR", "USD", "GBP"].contains(&t.currency))
        .count();
    assert!(major * 100 >= data.transactions.len() * 90, "{major}");
    let statuses: BTreeSet<&str> = data.transactions.iter().map(|t| t.status).collect();
    assert_eq!(statuses.len(), 3);
}

#[test]
fn articles_cover_every_topic_with_several_paragraphs() {
    let data = generate();
    let topics: BTreeSet<&str> = data.articles.iter().map(|a| a.topic).collect();
    for topic in [
        "disputes",
        "chargebacks",
        "card_fraud",
        "refunds",
        "sanctions_screening",
        "account_limits",
        "fees",
    ] {
        assert!(topics.contains(topic), "{topic}");
    }
    let titles: BTreeSet<&str> = data.articles.iter().map(|a| a.title.as_str()).collect();
    assert_eq!(titles.len(), data.articles.len(), "titles must be unique");
    for a in &data.articles {
        let paragraphs = a.body.split("\n\n").count();
        assert!(
            (3..=5).contains(&paragraphs),
            "{} has {paragraphs}",
            a.article_id
        );
        assert!(a.body.len() > 600, "{} is short", a.article_id);
    }
}
