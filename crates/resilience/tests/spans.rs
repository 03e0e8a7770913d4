//! The span of each dependency attempt (SPEC §12; `src/span.rs`), captured by a minimal
//! subscriber: one per attempt, the operation running inside it, its fields as the attempt
//! starts and ends, the retry decision and a chaos fault. Paused clock.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kosha_contract::dependency::Dependency;
use kosha_resilience::backoff::Backoff;
use kosha_resilience::chaos::{ChaosSpec, Fault, Target};
use kosha_resilience::classify::ErrorClass;
use kosha_resilience::deadline::Deadline;
use kosha_resilience::overrides::NoOverrides;
use kosha_resilience::policy::{Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Fields = BTreeMap<String, String>;

/// Every span's name and fields, and the span each event was emitted in.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    spans: Vec<(String, Fields)>,
    metadata: Vec<&'static Metadata<'static>>,
    stack: Vec<u64>,
    /// (event message, the span it was emitted in)
    events: Vec<(String, Option<u64>)>,
}

struct Collect<'a>(&'a mut Fields);

impl Visit for Collect<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut fields = Fields::new();
        attrs.record(&mut Collect(&mut fields));
        let mut s = self.0.lock();
        s.spans.push((attrs.metadata().name().to_owned(), fields));
        s.metadata.push(attrs.metadata());
        Id::from_u64(s.spans.len() as u64)
    }
    fn record(&self, id: &Id, values: &Record<'_>) {
        let mut s = self.0.lock();
        let (_, fields) = &mut s.spans[id.into_u64() as usize - 1];
        values.record(&mut Collect(fields));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::new();
        event.record(&mut Collect(&mut fields));
        let mut s = self.0.lock();
        let current = s.stack.last().copied();
        s.events
            .push((fields.remove("message").unwrap_or_default(), current));
    }
    fn enter(&self, id: &Id) {
        self.0.lock().stack.push(id.into_u64());
    }
    fn exit(&self, _: &Id) {
        self.0.lock().stack.pop();
    }
    // `Span::current()`, where the policy records a drawn fault.
    fn current_span(&self) -> tracing_core::span::Current {
        let s = self.0.lock();
        match s.stack.last() {
            Some(&id) => {
                tracing_core::span::Current::new(Id::from_u64(id), s.metadata[id as usize - 1])
            }
            None => tracing_core::span::Current::none(),
        }
    }
}

impl Spans {
    fn attempts(&self) -> Vec<Fields> {
        let s = self.0.lock();
        s.spans
            .iter()
            .filter(|(name, _)| name == "attempt")
            .map(|(_, f)| f.clone())
            .collect()
    }
}

fn policy() -> Policy {
    let mut c = common::core_api_read();
    c.retry.backoff = Backoff::try_new(Duration::from_millis(1), Duration::from_millis(1)).unwrap();
    Policy::try_new(Dependency::CoreApi, c, Arc::new(NoOverrides)).unwrap()
}

fn unavailable() -> ErrorClass {
    ErrorClass::Status {
        status: 503,
        retry_after: None,
    }
}

#[tokio::test(start_paused = true)]
async fn each_attempt_has_a_span_with_its_decision_and_the_call_runs_inside_it() {
    let spans = Spans::default();
    let _guard = tracing::subscriber::set_default(spans.clone());
    let p = policy();
    let deadline = Deadline::after(Duration::from_secs(3));
    let r: Result<u32, PolicyError<ErrorClass>> = p
        .call(&deadline, Idempotency::Idempotent, |a| async move {
            tracing::info!("calling");
            if a.number == 1 {
                Err(unavailable())
            } else {
                Ok(a.number)
            }
        })
        .await;
    assert_eq!(r.unwrap(), 2);
    let attempts = spans.attempts();
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    let (first, second) = (&attempts[0], &attempts[1]);
    for (n, a) in [first, second].into_iter().enumerate() {
        assert_eq!(a["dependency"], "core-api", "{a:?}");
        assert_eq!(a["attempt"], (n + 1).to_string(), "{a:?}");
        assert_eq!(a["breaker"], "closed", "{a:?}");
        assert_eq!(a["otel.name"], "core-api attempt", "{a:?}");
        assert_eq!(a["otel.kind"], "client", "{a:?}");
        assert!(a["timeout_ms"].parse::<u64>().unwrap() > 0, "{a:?}");
    }
    assert_eq!(first["deadline_remaining_ms"], "3000", "{first:?}");
    assert_eq!(first["outcome"], "error");
    assert_eq!(first["error.type"], "status");
    assert_eq!(first["http.response.status_code"], "503");
    assert_eq!(first["otel.status_code"], "error");
    // Full jitter: 0 or 1 ms.
    assert!(
        first["retry"].starts_with("after_") && first["retry"].ends_with("ms"),
        "{first:?}"
    );
    assert_eq!(second["outcome"], "ok");
    assert!(!second.contains_key("retry") && !second.contains_key("otel.status_code"));
    // Each call's event was emitted inside its own attempt's span.
    let s = spans.0.lock();
    let inside: Vec<_> = s
        .events
        .iter()
        .filter(|(m, _)| m == "calling")
        .map(|(_, span)| s.spans[span.unwrap() as usize - 1].0.clone())
        .collect();
    assert_eq!(inside, ["attempt", "attempt"]);
}

#[tokio::test(start_paused = true)]
async fn a_chaos_fault_is_recorded_on_its_attempt_and_the_last_says_why_it_stopped() {
    let spans = Spans::default();
    let _guard = tracing::subscriber::set_default(spans.clone());
    let p = policy();
    let mut faults = ChaosSpec::try_new(Target::CoreApi, Fault::Error, None, 1.0, 0)
        .unwrap()
        .faults_for(Target::CoreApi, StdRng::seed_from_u64(7))
        .unwrap();
    let r: Result<(), PolicyError<ErrorClass>> = p
        .call_with_faults(
            &Deadline::after(Duration::from_secs(3)),
            Idempotency::Idempotent,
            Some(&mut faults),
            |_| async { Ok(()) },
        )
        .await;
    assert!(matches!(r, Err(PolicyError::Inner(_))), "{r:?}");
    let attempts = spans.attempts();
    assert!(attempts.len() >= 2, "{attempts:?}");
    for a in &attempts {
        assert_eq!(a["fault"], "error", "{a:?}");
        assert_eq!(a["http.response.status_code"], "503", "{a:?}");
    }
    let last = attempts.last().unwrap();
    assert!(!last["retry"].starts_with("after_"), "{last:?}");
    assert!(
        attempts[..attempts.len() - 1]
            .iter()
            .all(|a| a["retry"].starts_with("after_"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_rejected_call_opens_no_attempt() {
    let spans = Spans::default();
    let _guard = tracing::subscriber::set_default(spans.clone());
    let p = policy();
    let r: Result<(), PolicyError<ErrorClass>> = p
        .call(
            &Deadline::after(Duration::ZERO),
            Idempotency::Idempotent,
            |_| async { Ok(()) },
        )
        .await;
    assert!(matches!(r, Err(PolicyError::DeadlineExceeded)));
    assert!(spans.attempts().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_leg_of_a_hedge_race_that_lost_says_cancelled_and_the_winner_ok() {
    use kosha_resilience::hedge::HedgeConfig;
    let p = policy().with_hedging(HedgeConfig::DEFAULT).unwrap();
    let deadline = || Deadline::after(Duration::from_secs(60));
    // 200 answers of 5 ms: hedges go out after about 5 ms and the budget holds tokens.
    for _ in 0..200 {
        let r: Result<(), PolicyError<ErrorClass>> = p
            .call(&deadline(), Idempotency::Idempotent, |_| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok(())
            })
            .await;
        r.unwrap();
    }
    let spans = Spans::default();
    let _guard = tracing::subscriber::set_default(spans.clone());
    // The hedge wins (the primary stalls 1 s), then the primary wins (the hedge stalls).
    for hedge_wins in [true, false] {
        let r: Result<bool, PolicyError<ErrorClass>> = p
            .call(&deadline(), Idempotency::Idempotent, |a| async move {
                let slow = a.hedge != hedge_wins;
                let ms = if slow {
                    1_000
                } else if a.hedge {
                    5
                } else {
                    10
                };
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(a.hedge)
            })
            .await;
        assert_eq!(r.unwrap(), hedge_wins);
    }
    let attempts = spans.attempts();
    assert_eq!(attempts.len(), 4, "{attempts:?}");
    let outcome = |a: &Fields| (a.get("hedge").cloned(), a["outcome"].clone());
    let hedge = Some("true".to_owned());
    // Spans in the order they opened: primary, hedge; primary, hedge.
    assert_eq!(outcome(&attempts[0]), (None, "cancelled".to_owned()));
    assert_eq!(outcome(&attempts[1]), (hedge.clone(), "ok".to_owned()));
    assert_eq!(outcome(&attempts[2]), (None, "ok".to_owned()));
    assert_eq!(outcome(&attempts[3]), (hedge, "cancelled".to_owned()));
}
