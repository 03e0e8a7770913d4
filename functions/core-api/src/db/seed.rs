//! The deterministic seed (SPEC §4 stable ids): 50 accounts, 5,000 transactions and 40
//! knowledge-base articles, generated from a fixed PRNG seed and a fixed base date, never the
//! wall clock, so every run on every machine writes the same rows.
//!
//! [`apply`] inserts them in one transaction with `ON CONFLICT DO NOTHING`: running it again
//! changes nothing, and rows written later by the API (disputes, reviews) are left alone.

pub mod articles;
pub mod corpus;
pub mod ledger;

use time::OffsetDateTime;
use tokio_postgres::Client;

use super::DbError;
use articles::Article;
use kosha_splitmix::{Index, SplitMix64};
use ledger::{Account, Transaction};

/// The PRNG seed ("KOSHA" in ASCII). Changing it changes every seeded row.
pub const SEED: u64 = 0x004B_4F53_4841;

/// Everything the seed writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedData {
    /// `acc_0001`…`acc_0050`.
    pub accounts: Vec<Account>,
    /// `txn_000001`…`txn_005000`, 100 per account.
    pub transactions: Vec<Transaction>,
    /// `kb_001`…`kb_040`.
    pub articles: Vec<Article>,
}

/// Row counts per seeded table: rows inserted by [`apply`] (0 everywhere on a second run),
/// seeded rows found by [`count_present`], or rows the seed holds ([`SeedData::counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeedCounts {
    /// Accounts.
    pub accounts: u64,
    /// Transactions.
    pub transactions: u64,
    /// Knowledge-base articles.
    pub articles: u64,
}

impl SeedCounts {
    /// Whether every count is zero.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

impl std::fmt::Display for SeedCounts {
    /// `50 accounts, 5000 transactions, 40 articles`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} accounts, {} transactions, {} articles",
            self.accounts, self.transactions, self.articles
        )
    }
}

impl SeedData {
    /// How many rows of each table the seed holds.
    pub fn counts(&self) -> SeedCounts {
        let n = |len: usize| u64::try_from(len).unwrap_or(u64::MAX);
        SeedCounts {
            accounts: n(self.accounts.len()),
            transactions: n(self.transactions.len()),
            articles: n(self.articles.len()),
        }
    }
}

/// Generates the seed data; pure and deterministic.
pub fn generate() -> SeedData {
    let mut rng = SplitMix64::with_index(SEED, Index::Modulo);
    let accounts = ledger::accounts(&mut rng);
    let transactions = ledger::transactions(&mut rng, &accounts);
    let articles = articles::articles(&mut rng);
    SeedData {
        accounts,
        transactions,
        articles,
    }
}

/// Inserts the seed in one transaction; rows that already exist are skipped.
///
/// # Errors
/// [`DbError`] when PostgreSQL fails; nothing is written then.
pub async fn apply(client: &mut Client, data: &SeedData) -> Result<SeedCounts, DbError> {
    let tx = client.transaction().await?;
    let accounts = insert_accounts(&tx, &data.accounts).await?;
    let transactions = insert_transactions(&tx, &data.transactions).await?;
    let articles = insert_articles(&tx, &data.articles).await?;
    tx.commit().await?;
    Ok(SeedCounts {
        accounts,
        transactions,
        articles,
    })
}

/// Checks that every seeded id is present.
///
/// # Errors
/// [`DbError`] when PostgreSQL fails.
pub async fn is_present(client: &Client, data: &SeedData) -> Result<bool, DbError> {
    Ok(count_present(client, data).await? == data.counts())
}

/// How many of the seed's ids each table holds (rows added later by the API are not counted).
///
/// # Errors
/// [`DbError`] when PostgreSQL fails.
pub async fn count_present(client: &Client, data: &SeedData) -> Result<SeedCounts, DbError> {
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM core.accounts WHERE account_id = ANY($1)),
                    (SELECT count(*) FROM core.transactions WHERE transaction_id = ANY($2)),
                    (SELECT count(*) FROM kb.articles WHERE article_id = ANY($3))",
            &[
                &ids(&data.accounts, |a| &a.account_id),
                &ids(&data.transactions, |t| &t.transaction_id),
                &ids(&data.articles, |a| &a.article_id),
            ],
        )
        .await?;
    let count = |i: usize| -> Result<u64, DbError> {
        let n: i64 = row.try_get(i)?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    Ok(SeedCounts {
        accounts: count(0)?,
        transactions: count(1)?,
        articles: count(2)?,
    })
}

fn ids<T>(rows: &[T], id: impl Fn(&T) -> &String) -> Vec<&str> {
    rows.iter().map(|r| id(r).as_str()).collect()
}

async fn insert_accounts(
    tx: &tokio_postgres::Transaction<'_>,
    rows: &[Account],
) -> Result<u64, DbError> {
    let opened: Vec<OffsetDateTime> = rows.iter().map(|a| a.opened_at).collect();
    let n = tx
        .execute(
            "INSERT INTO core.accounts (account_id, display_name, currency, opened_at)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
             ON CONFLICT DO NOTHING",
            &[
                &ids(rows, |a| &a.account_id),
                &ids(rows, |a| &a.display_name),
                &rows.iter().map(|a| a.currency).collect::<Vec<_>>(),
                &opened,
            ],
        )
        .await?;
    Ok(n)
}

async fn insert_transactions(
    tx: &tokio_postgres::Transaction<'_>,
    rows: &[Transaction],
) -> Result<u64, DbError> {
    let amounts: Vec<i64> = rows.iter().map(|t| t.amount_minor).collect();
    let booked: Vec<OffsetDateTime> = rows.iter().map(|t| t.booked_at).collect();
    let n = tx
        .execute(
            "INSERT INTO core.transactions
                 (transaction_id, account_id, amount_minor, currency, merchant, category, status, booked_at)
             SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[],
                                  $6::text[], $7::text[], $8::timestamptz[])
             ON CONFLICT DO NOTHING",
            &[
                &ids(rows, |t| &t.transaction_id),
                &ids(rows, |t| &t.account_id),
                &amounts,
                &rows.iter().map(|t| t.currency).collect::<Vec<_>>(),
                &rows.iter().map(|t| t.merchant).collect::<Vec<_>>(),
                &rows.iter().map(|t| t.category).collect::<Vec<_>>(),
                &rows.iter().map(|t| t.status).collect::<Vec<_>>(),
                &booked,
            ],
        )
        .await?;
    Ok(n)
}

async fn insert_articles(
    tx: &tokio_postgres::Transaction<'_>,
    rows: &[Article],
) -> Result<u64, DbError> {
    let n = tx
        .execute(
            "INSERT INTO kb.articles (article_id, title, body, topic)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
             ON CONFLICT DO NOTHING",
            &[
                &ids(rows, |a| &a.article_id),
                &ids(rows, |a| &a.title),
                &ids(rows, |a| &a.body),
                &rows.iter().map(|a| a.topic).collect::<Vec<_>>(),
            ],
        )
        .await?;
    Ok(n)
}

#[cfg(test)]
mod tests;
