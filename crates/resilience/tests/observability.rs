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
use kosha_resilience::fleet::{FleetSignal, FleetTrips};
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

/// Records `to:why:reason` of every event.
#[derive(Clone, Default)]
struct Transitions(Arc<Mutex<Vec<String>>>);

struct ToField<'a>(&'a mut Option<String>, &'a mut String, &'a mut String);

impl Visit for ToField<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "to" => *self.0 = Some(value.to_owned()),
            "why" => *self.1 = value.to_owned(),
            "reason" => *self.2 = value.to_owned(),
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
        let (mut to, mut why, mut reason) = (None, String::new(), String::new());
        event.record(&mut ToField(&mut to, &mut why, &mut reason));
        if let Some(to) = to {
            self.0.lock().push(format!("{to}:{why}:{reason}"));
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
            "open:failure_rate:own",
            "half_open:open_duration_elapsed:own",
            "closed:probes_succeeded:own",
            "forced_open:override_set:forced",
            "closed:override_cleared:forced"
        ],
        "one log event per transition, with why and reason"
    );
    let counted = |to: &str, reason: &str| {
        capture.counter(&format!(
            "breaker_transition{{dependency=openai,to={to},reason={reason}}}"
        ))
    };
    assert_eq!(
        [
            counted("open", "own"),
            counted("half_open", "own"),
            counted("closed", "own"),
            counted("forced_open", "forced"),
            counted("closed", "forced"),
            counted("open", "fleet"),
        ],
        [1, 1, 1, 1, 1, 0],
        "breaker_transition counts each transition with its reason (SPEC §12)"
    );
}

/// A fleet whose trips the test sets: `(instance, epoch ms)`; the wall clock stands at 0.
#[derive(Default)]
struct Fleet {
    trips: Mutex<Vec<(&'static str, i64)>>,
    recorded: AtomicU64,
}

impl FleetSignal for Fleet {
    fn count_after(&self, _: &str, after_ms: i64) -> usize {
        self.trips
            .lock()
            .iter()
            .filter(|(_, t)| *t > after_ms)
            .count()
    }
    fn record_trip(&self, _: &str, _: Duration) {
        self.recorded.fetch_add(1, Ordering::SeqCst);
    }
    fn now_ms(&self) -> i64 {
        0
    }
}

#[tokio::test(start_paused = true)]
async fn a_fleet_open_is_logged_and_counted_with_reason_fleet_and_records_no_trip() {
    let capture = Arc::new(Capture::default());
    let transitions = Transitions::default();
    let _log = tracing::subscriber::set_default(transitions.clone());
    let fleet = Arc::new(Fleet::default());
    let policy = metrics::with_local_recorder(capture.as_ref(), || {
        Policy::try_new(
            kosha_contract::dependency::Dependency::OpenAi,
            common::openai(),
            Arc::new(StaticOverrides::default()),
        )
        .unwrap()
        .with_fleet(FleetTrips::try_new("openai", 2, fleet.clone()).unwrap())
        .unwrap()
    });
    fleet.trips.lock().push(("a", -1));
    assert_eq!(policy.health().state.as_str(), "closed", "one trip");
    assert_eq!(policy.health().fleet_trips, Some(1));
    fleet.trips.lock().push(("b", -1));
    assert_eq!(policy.health().state.as_str(), "open", "two trips");
    let refused: Result<(), _> = policy
        .call(
            &Deadline::after(Duration::from_secs(60)),
            Idempotency::Idempotent,
            |_| async { Ok::<(), ErrorClass>(()) },
        )
        .await;
    assert!(
        matches!(refused, Err(PolicyError::CircuitOpen { .. })),
        "{refused:?}"
    );
    assert_eq!(*transitions.0.lock(), ["open:fleet_trips:fleet"]);
    assert_eq!(
        capture.counter("breaker_transition{dependency=openai,to=open,reason=fleet}"),
        1
    );
    assert_eq!(fleet.recorded.load(Ordering::SeqCst), 0, "not own evidence");
    // Trips older than the open duration (30 s) no longer count.
    fleet.trips.lock().clear();
    fleet.trips.lock().extend([("a", -30_000), ("b", -30_001)]);
    assert_eq!(policy.health().fleet_trips, Some(0));
}

#[test]
fn a_quorum_under_two_is_refused() {
    let fleet = Arc::new(Fleet::default());
    for quorum in [0, 1] {
        let err = FleetTrips::try_new("core-api", quorum, fleet.clone()).unwrap_err();
        assert!(err.to_string().contains("at least 2"), "{err}");
    }
    assert!(FleetTrips::try_new("core-api", 2, fleet).is_ok());
}
