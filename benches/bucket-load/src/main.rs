//! The token bucket alone under load (issue 16; run by `scripts/bench-load`): the gateway's
//! own [`DynamoRateLimiter`] and DynamoDB client, as `tools/call` uses them, with no HTTP in
//! front. `--concurrency N` workers, each a client of its own (as N agents), take tokens for
//! `--seconds`, back to back or one every `--interval-ms`; one JSON line on stdout:
//! `requests`, `seconds`, `throughput_per_s`, `p50_ms`, `p99_ms`, `max_ms`, the decisions
//! (`allowed`, `limited`, `fail_open`), `dynamodb_requests` (every request the limiter sent,
//! warm-up excluded) and `writes_per_admitted` (those over `allowed`). A `fail_open` is a
//! DynamoDB call that failed or took over the 100 ms call timeout, so a run that has any
//! measured the emulator's limit, not the bucket's.
//!
//! Without `--leases` every take is one bucket write (`lease_max_tokens` 1: the write's cost,
//! issue 16's figure); with it, the gateway's lease settings apply (SPEC §6, issue 28), so
//! `writes_per_admitted` is what a caller at that pace costs DynamoDB.
//!
//! Reads the gateway's settings: `KOSHA_STATE_TABLE`, `KOSHA_RATE_CAPACITY`,
//! `KOSHA_RATE_PER_SEC` (set them high for back-to-back takes, or the buckets run dry),
//! `KOSHA_LEASE_SECONDS`, `KOSHA_LEASE_MAX_TOKENS`, `AWS_ENDPOINT_URL` and the SDK's usual
//! variables.
//!
//! ```sh
//! cargo run --release -p bucket-load -- --concurrency 16 --seconds 10
//! # one agent calling once a second, with leases (SPEC §6 defaults: capacity 20, 1/s):
//! cargo run --release -p bucket-load -- --leases --interval-ms 1000 --seconds 60
//! ```

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use kosha_resilience::rate_limit::{Bucket, RateDecision, RateLimiter};
use kosha_state::test_support::{CallCounter, counted_dynamo};
use kosha_state::{DynamoRateLimiter, RateLimitSettings, StateTable, SystemClock};
use tokio::time::Instant;

#[derive(Parser)]
struct Args {
    /// Workers taking tokens at once, each for a client of its own.
    #[arg(long, default_value_t = 1)]
    concurrency: usize,
    /// How long to measure, after one warm-up take per client (s).
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Client ids are `<prefix>-<worker>`.
    #[arg(long, default_value = "bench-bucket")]
    client_prefix: String,
    /// Each worker waits this long between takes (ms; 0: back to back).
    #[arg(long, default_value_t = 0)]
    interval_ms: u64,
    /// Take tokens in leases, as the gateway does (else one write per take).
    #[arg(long)]
    leases: bool,
}

#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    allowed: u64,
    limited: u64,
    fail_open: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let sdk = kosha_runtime::aws::sdk_config().await;
    let requests = CallCounter::default();
    let client = counted_dynamo(&sdk, &requests);
    let table = StateTable::new(client, StateTable::name_from_env()?)?;
    let mut settings = RateLimitSettings::from_env()?;
    if !args.leases {
        settings.lease_max_tokens = 1;
    }
    let limiter = Arc::new(DynamoRateLimiter::new(
        &table,
        settings,
        Arc::new(SystemClock),
    ));
    let interval = Duration::from_millis(args.interval_ms);
    let clients: Vec<String> = (0..args.concurrency.max(1))
        .map(|i| format!("{}-{i}", args.client_prefix))
        .collect();
    // Warm-up: each client's first take may be a conditional create plus a retry.
    for client in &clients {
        limiter.check(Bucket::client(client), 1).await;
    }
    let warm_up = requests.get();
    let started = Instant::now();
    let end = started + Duration::from_secs_f64(args.seconds);
    let workers: Vec<_> = clients
        .into_iter()
        .map(|client| {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move {
                let mut tally = Tally::default();
                while Instant::now() < end {
                    let t0 = Instant::now();
                    let decision = limiter.check(Bucket::client(&client), 1).await;
                    tally.latencies.push(t0.elapsed());
                    match decision {
                        RateDecision::Allowed => tally.allowed += 1,
                        RateDecision::Limited { .. } => tally.limited += 1,
                        RateDecision::FailOpen => tally.fail_open += 1,
                    }
                    if !interval.is_zero() {
                        tokio::time::sleep_until(t0 + interval).await;
                    }
                }
                tally
            })
        })
        .collect();
    let mut all = Tally::default();
    for worker in workers {
        let t = worker.await?;
        all.latencies.extend(t.latencies);
        all.allowed += t.allowed;
        all.limited += t.limited;
        all.fail_open += t.fail_open;
    }
    let seconds = started.elapsed().as_secs_f64();
    all.latencies.sort_unstable();
    let ms = |q: f64| {
        let n = all.latencies.len();
        if n == 0 {
            return 0.0;
        }
        let i = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
        all.latencies[i].as_secs_f64() * 1000.0
    };
    let takes = all.latencies.len();
    let dynamodb = requests.get() - warm_up;
    let per_admitted = if all.allowed == 0 {
        0.0
    } else {
        dynamodb as f64 / all.allowed as f64
    };
    println!(
        "{{\"requests\":{takes},\"seconds\":{seconds:.3},\"throughput_per_s\":{:.1},\
         \"p50_ms\":{:.3},\"p99_ms\":{:.3},\"max_ms\":{:.3},\"allowed\":{},\"limited\":{},\
         \"fail_open\":{},\"dynamodb_requests\":{dynamodb},\"writes_per_admitted\":{per_admitted:.3}}}",
        takes as f64 / seconds,
        ms(0.50),
        ms(0.99),
        ms(1.0),
        all.allowed,
        all.limited,
        all.fail_open
    );
    Ok(())
}
