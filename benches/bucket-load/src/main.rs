//! The token bucket alone under load (issue 16; run by `scripts/bench-load`): the gateway's
//! own [`DynamoRateLimiter`] and DynamoDB client, as `tools/call` uses them, with no HTTP in
//! front. `--concurrency N` workers, each a client of its own (as N agents), take tokens for
//! `--seconds`; one JSON line on stdout: `requests`, `seconds`, `throughput_per_s`, `p50_ms`,
//! `p99_ms`, `max_ms`, and the decisions (`allowed`, `limited`, `fail_open`). A `fail_open`
//! is a DynamoDB call that failed or took over the 100 ms call timeout, so a run that has
//! any measured the emulator's limit, not the bucket's.
//!
//! Reads the gateway's settings: `KOSHA_STATE_TABLE`, `KOSHA_RATE_CAPACITY`,
//! `KOSHA_RATE_PER_SEC` (set them high, or the buckets run dry), `AWS_ENDPOINT_URL` and the
//! SDK's usual variables.
//!
//! ```sh
//! cargo run --release -p bucket-load -- --concurrency 16 --seconds 10
//! ```

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use kosha_resilience::rate_limit::{RateDecision, RateLimiter};
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
    let table = StateTable::from_env(&sdk)?;
    let limiter = Arc::new(DynamoRateLimiter::new(
        &table,
        RateLimitSettings::from_env()?,
        Arc::new(SystemClock),
    ));
    let clients: Vec<String> = (0..args.concurrency.max(1))
        .map(|i| format!("{}-{i}", args.client_prefix))
        .collect();
    // Warm-up: each client's first take may be a conditional create plus a retry.
    for client in &clients {
        limiter.check(client).await;
    }
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
                    let decision = limiter.check(&client).await;
                    tally.latencies.push(t0.elapsed());
                    match decision {
                        RateDecision::Allowed => tally.allowed += 1,
                        RateDecision::Limited { .. } => tally.limited += 1,
                        RateDecision::FailOpen => tally.fail_open += 1,
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
    let requests = all.latencies.len();
    println!(
        "{{\"requests\":{requests},\"seconds\":{seconds:.3},\"throughput_per_s\":{:.1},\
         \"p50_ms\":{:.3},\"p99_ms\":{:.3},\"max_ms\":{:.3},\"allowed\":{},\"limited\":{},\
         \"fail_open\":{}}}",
        requests as f64 / seconds,
        ms(0.50),
        ms(0.99),
        ms(1.0),
        all.allowed,
        all.limited,
        all.fail_open
    );
    Ok(())
}
