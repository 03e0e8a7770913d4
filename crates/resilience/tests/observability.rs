//! Metrics (SPEC §12, gauge values SPEC §8) and transition log events, captured with an
//! in-memory metrics recorder and a minimal tracing subscriber.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kosha_resilience::classify::ErrorClass;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::overrides::{ForcedOpen, StaticOverrides};
use kosha_resilience::policy::{Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};

/// Keeps one atomic per `name{label=value,…}`.
#[derive(Default)]
struct Capture(Mutex<HashMap<String, Arc<AtomicU64>>>);

impl Capture {
    fn slot(&self, key: &Key) -> Arc<AtomicU64> {
        let labels: Vec<_> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        self.0.lock().entry(name).or_default().clone()
    }

    fn counter(&self, name: &str) -> u64 {
        self.0
            .lock()
            .get(name)
            .map_or(0, |v| v.load(Ordering::SeqCst))
    }

    fn gauge(&self, name: &str) -> f64 {
        f64::from_bits(
            self.0
                .lock()
                .get(name)
                .map_or(0, |v| v.load(Ordering::SeqCst)),
        )
    }
}

impl Recorder for Capture {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.slot(key))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.slot(key))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Records `to:why` of every event.
#[derive(Clone, Default)]
struct Transitions(Arc<Mutex<Vec<String>>>);

struct ToField<'a>(&'a mut Option<String>, &'a mut String);

impl Visit for ToField<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "to" => *self.0 = Some(value.to_owned()),
            "why" => *self.1 = value.to_owned(),
            _ => {}
        }
    }
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}

impl Subscriber for Transitions {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let (mut to, mut why) = (None, String::new());
        event.record(&mut ToField(&mut to, &mut why));
        if let Some(to) = to {
            self.0.lock().push(format!("{to}:{why}"));
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

const STATE: &str = "breaker_state{dependency=openai}";

#[tokio::test(start_paused = true)]
async fn metrics_and_transition_events() {
    let capture = Arc::new(Capture::default());
    let transitions = Transitions::default();
    let _log = tracing::subscriber::set_default(transitions.clone());
    let overrides = StaticOverrides::default();
    let mut config = common::openai();
    config.bulkhead.capacity = 1;
    config.bulkhead.wait = Duration::ZERO;
    let policy = metrics::with_local_recorder(capture.as_ref(), || {
        Policy::try_new(
            kosha_contract::dependency::Dependency::OpenAi,
            config,
            Arc::new(overrides.clone()),
        )
        .unwrap()
    });
    let long = Deadline::after(Duration::from_secs(60));
    assert_eq!(capture.gauge(STATE), 0.0);

    // A retried failure: `retries` counts, then the budget floor is spent.
    let _: Result<(), _> = policy
        .call(&long, Idempotency::Idempotent, |_| async {
            Err(ErrorClass::Connect)
        })
        .await;
    assert_eq!(capture.counter("retries{dependency=openai}"), 1);
    let _: Result<(), _> = policy
        .call(&long, Idempotency::Idempotent, |_| async {
            Err(ErrorClass::Connect)
        })
        .await;
    assert_eq!(
        capture.counter("retry_budget_exhausted{dependency=openai}"),
        1
    );

    // In-flight gauge and bulkhead rejections.
    let inner: Result<Result<(), PolicyError<ErrorClass>>, _> = policy
        .call(&long, Idempotency::Idempotent, |_| async {
            assert_eq!(capture.gauge("bulkhead_in_flight{dependency=openai}"), 1.0);
            let nested = policy
                .call(&long, Idempotency::Idempotent, |_| async {
                    Ok::<(), ErrorClass>(())
                })
                .await;
            Ok::<_, ErrorClass>(nested)
        })
        .await;
    assert!(matches!(inner, Ok(Err(PolicyError::BulkheadFull))));
    assert_eq!(capture.counter("bulkhead_rejected{dependency=openai}"), 1);
    assert_eq!(capture.gauge("bulkhead_in_flight{dependency=openai}"), 0.0);

    // Deadline exceeded, by hop.
    let expired = Deadline::after(Duration::ZERO);
    let _: Result<(), _> = policy
        .call(&expired, Idempotency::Idempotent, |_| async {
            Ok::<(), ErrorClass>(())
        })
        .await;
    assert_eq!(capture.counter("deadline_exceeded{hop=openai}"), 1);

    // Breaker gauge through every state: 2 open, 1 half-open, 0 closed, 3 forced.
    for _ in 0..5 {
        let _: Result<(), _> = policy
            .call(&long, Idempotency::NonIdempotent, |_| async {
                Err(ErrorClass::Timeout)
            })
            .await;
    }
    assert_eq!(capture.gauge(STATE), 2.0);
    tokio::time::advance(Duration::from_secs(30)).await;
    assert_eq!(policy.health().state.as_str(), "half_open");
    assert_eq!(capture.gauge(STATE), 1.0);
    for _ in 0..3 {
        let _: Result<(), _> = policy
            .call(&long, Idempotency::Idempotent, |_| async {
                Ok::<(), ErrorClass>(())
            })
            .await;
    }
    assert_eq!(capture.gauge(STATE), 0.0);
    overrides.force_open(
        "openai",
        ForcedOpen {
            reason: "r".into(),
            set_by: "s".into(),
            set_at: 0,
            expires_at: None,
        },
    );
    assert_eq!(policy.health().state.as_str(), "forced_open");
    assert_eq!(capture.gauge(STATE), 3.0);
    overrides.clear("openai");
    assert_eq!(policy.health().state.as_str(), "closed");

    assert_eq!(
        *transitions.0.lock(),
        [
            "open:failure_rate",
            "half_open:open_duration_elapsed",
            "closed:probes_succeeded",
            "forced_open:override_set",
            "closed:override_cleared"
        ],
        "one log event per transition, with why"
    );
}
