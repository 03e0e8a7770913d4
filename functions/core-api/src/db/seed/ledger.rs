//! Accounts and transactions of the seed (SPEC §4): `acc_0001`…`acc_0050`, each with 100
//! transactions, numbered `txn_000001`… in account order, booked in the 365 days from [`BASE`] (2025-11-01 to
//! 2026-10-31 UTC): a fixed period in the past, so the data is deterministic and no booking
//! lies in the future.

use time::{Duration, OffsetDateTime, macros::datetime};

use kosha_splitmix::SplitMix64;

/// Number of seeded accounts.
pub const ACCOUNTS: u32 = 50;
/// Transactions per account (so 5,000 in all).
pub const TRANSACTIONS_PER_ACCOUNT: u32 = 100;
/// Start of the booking period; no wall clock is ever read.
pub const BASE: OffsetDateTime = datetime!(2025-11-01 00:00:00 UTC);
/// Length of the booking period in days (to 2026-10-31).
const DAYS: i64 = 365;

/// A seeded account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// `acc_0001`…
    pub account_id: String,
    /// Holder's display name.
    pub display_name: String,
    /// ISO 4217 home currency.
    pub currency: &'static str,
    /// When the account was opened (before [`BASE`]).
    pub opened_at: OffsetDateTime,
}

/// A seeded transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// `txn_000001`…
    pub transaction_id: String,
    /// Owning account.
    pub account_id: String,
    /// Charged amount in minor units (cents), positive.
    pub amount_minor: i64,
    /// ISO 4217 currency of the charge.
    pub currency: &'static str,
    /// Merchant name.
    pub merchant: &'static str,
    /// Spending category.
    pub category: &'static str,
    /// `booked`, `pending` or `reversed`.
    pub status: &'static str,
    /// Booking time, whole minutes, UTC.
    pub booked_at: OffsetDateTime,
}

const FIRST: [&str; 10] = [
    "Amara", "Bastian", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiroshi", "Ines", "Jonas",
];
const LAST: [&str; 10] = [
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Novak",
    "Petrov",
    "Quinn",
    "Rossi",
    "Schmidt",
    "Tanaka",
    "Varga",
];
const HOME_CURRENCIES: [&str; 4] = ["EUR", "EUR", "USD", "GBP"];
const FOREIGN_CURRENCIES: [&str; 7] = ["EUR", "USD", "GBP", "EUR", "CHF", "SEK", "PLN"];

/// (merchant, category, min cents, max cents)
const MERCHANTS: [(&str, &str, i64, i64); 24] = [
    ("Albert Heijn", "groceries", 350, 14_000),
    ("Tesco", "groceries", 250, 12_000),
    ("Whole Foods Market", "groceries", 800, 18_000),
    ("Lidl", "groceries", 200, 9_000),
    ("Shell", "fuel", 2_000, 11_000),
    ("BP", "fuel", 2_000, 10_500),
    ("Deutsche Bahn", "travel", 1_900, 24_000),
    ("Ryanair", "travel", 2_900, 38_000),
    ("Uber", "transport", 600, 6_500),
    ("Lufthansa", "travel", 9_000, 120_000),
    ("Booking.com", "lodging", 6_000, 95_000),
    ("Airbnb", "lodging", 7_500, 140_000),
    ("Amazon", "online_retail", 500, 45_000),
    ("Zalando", "online_retail", 1_500, 30_000),
    ("IKEA", "home", 900, 80_000),
    ("MediaMarkt", "electronics", 1_500, 150_000),
    ("Apple Store", "electronics", 99, 250_000),
    ("Netflix", "subscriptions", 799, 1_999),
    ("Spotify", "subscriptions", 999, 1_799),
    ("Starbucks", "restaurants", 290, 1_800),
    ("Pret A Manger", "restaurants", 350, 2_400),
    ("Vodafone", "utilities", 1_500, 8_000),
    ("Boots Pharmacy", "health", 300, 6_000),
    ("City Parking", "transport", 150, 3_500),
];

/// The seeded accounts, in id order.
pub fn accounts(rng: &mut SplitMix64) -> Vec<Account> {
    (1..=ACCOUNTS)
        .map(|n| {
            let first = rng.pick(&FIRST).copied().unwrap_or("Alex");
            let last = rng.pick(&LAST).copied().unwrap_or("Doe");
            let currency = rng.pick(&HOME_CURRENCIES).copied().unwrap_or("EUR");
            let opened_days_before = rng.between(30, 6 * 365);
            Account {
                account_id: format!("acc_{n:04}"),
                display_name: format!("{first} {last}"),
                currency,
                opened_at: BASE - Duration::days(opened_days_before),
            }
        })
        .collect()
}

/// The seeded transactions of `accounts`, ids in account order.
pub fn transactions(rng: &mut SplitMix64, accounts: &[Account]) -> Vec<Transaction> {
    let mut out = Vec::with_capacity(accounts.len() * TRANSACTIONS_PER_ACCOUNT as usize);
    for account in accounts {
        for _ in 0..TRANSACTIONS_PER_ACCOUNT {
            let number = out.len() + 1;
            out.push(transaction(rng, account, format!("txn_{number:06}")));
        }
    }
    out
}

fn transaction(rng: &mut SplitMix64, account: &Account, transaction_id: String) -> Transaction {
    let (merchant, category, lo, hi) = rng.pick(&MERCHANTS).copied().unwrap_or(MERCHANTS[0]);
    // Skew towards small amounts: most card spending is small.
    let skew = rng.unit() * rng.unit();
    let amount_minor = lo + ((hi - lo) as f64 * skew).round() as i64;
    let currency = if rng.below(10) == 0 {
        rng.pick(&FOREIGN_CURRENCIES).copied().unwrap_or("EUR")
    } else {
        account.currency
    };
    let status = match rng.below(100) {
        0..=85 => "booked",
        86..=94 => "pending",
        _ => "reversed",
    };
    let minutes = rng.between(0, DAYS - 1) * 24 * 60 + rng.between(7, 22) * 60 + rng.between(0, 59);
    Transaction {
        transaction_id,
        account_id: account.account_id.clone(),
        amount_minor,
        currency,
        merchant,
        category,
        status,
        booked_at: BASE + Duration::minutes(minutes),
    }
}
