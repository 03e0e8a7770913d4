//! The metric catalogue (SPEC §12): every metric Kosha emits, with its type, unit, dimensions
//! and where it is emitted. [`crate::telemetry::init`] describes the units to the EMF recorder
//! from it; `docs/metrics.md` prints it ([`markdown_table`]; a test keeps them equal), and the
//! EMF test of the gateway (`functions/mcp-gateway/tests/metrics.rs`) and the template check
//! (`tests/infra/check_template.py`) read that table. A test tokenises the workspace's
//! sources and fails on a `counter!`, `gauge!` or `histogram!` whose name, kind or label is
//! not catalogued, and on an entry nothing emits (issue 45: `hedges` was emitted uncatalogued).
//!
//! Dimensions are low-cardinality by rule: a fixed set of values each (dependency names, tool
//! names, error codes, reasons), never a client id or a request id.

use metrics::Unit;

/// How a metric aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A count since the last flush (EMF: the delta).
    Counter,
    /// The current value at flush time.
    Gauge,
    /// Every value recorded since the last flush (EMF: up to 100 values per document, so more
    /// are split over several documents, [`crate::emf`]).
    Histogram,
}

impl Kind {
    /// `counter`, `gauge` or `histogram`, as the docs table prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        }
    }
}

/// One metric of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// The EMF metric name, in namespace [`crate::telemetry::NAMESPACE`].
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// The CloudWatch unit; `None` prints as `None` (a state code, not a quantity).
    pub unit: Option<Unit>,
    /// The dimension names, in EMF order.
    pub dimensions: &'static [&'static str],
    /// Where it is emitted.
    pub emitted_by: &'static str,
    /// What a value means, with the dimension values.
    pub meaning: &'static str,
}

/// Every metric, in the docs table's order.
pub const CATALOGUE: &[Metric] = &[
    Metric {
        name: "tool_duration_ms",
        kind: Kind::Histogram,
        unit: Some(Unit::Milliseconds),
        dimensions: &["tool", "outcome"],
        emitted_by: "mcp-gateway `tools/observe.rs` (every `tools/call` of a known tool)",
        meaning: "wall time of one call; `outcome` is `ok` or the error code (`rate_limited` \
                  included); p50/p99 per tool",
    },
    Metric {
        name: "breaker_state",
        kind: Kind::Gauge,
        unit: None,
        dimensions: &["dependency"],
        emitted_by: "kosha-resilience `breaker.rs`",
        meaning: "0 closed, 1 half-open, 2 open, 3 forced open (SPEC §8)",
    },
    Metric {
        name: "breaker_transition",
        kind: Kind::Counter,
        unit: None,
        dimensions: &["dependency", "reason", "to"],
        emitted_by: "kosha-resilience `breaker.rs`",
        meaning: "one per breaker transition; `to`: `open`, `half_open`, `closed`, \
                  `forced_open`; `reason`: `own` (this instance's evidence: failure rate, \
                  probes, open duration passed), `fleet` (the quorum's fleet trips, SPEC §8), \
                  `forced` (an operator's override set or cleared) (SPEC §12)",
    },
    Metric {
        name: "bulkhead_in_flight",
        kind: Kind::Gauge,
        unit: Some(Unit::Count),
        dimensions: &["dependency"],
        emitted_by: "kosha-resilience `bulkhead.rs`",
        meaning: "calls holding a bulkhead slot at flush time",
    },
    Metric {
        name: "bulkhead_limit",
        kind: Kind::Gauge,
        unit: Some(Unit::Count),
        dimensions: &["dependency"],
        emitted_by: "kosha-resilience `adaptive.rs` (`KOSHA_ADAPTIVE_CONCURRENCY=true` only)",
        meaning: "the adaptive limit now: calls in flight allowed, per bulkhead; in the gateway \
                  `dependency` is `core-api` (reads), `core-api-writes` or `screening-sim` \
                  (SPEC §12)",
    },
    Metric {
        name: "bulkhead_rejected",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["dependency"],
        emitted_by: "kosha-resilience `bulkhead.rs`",
        meaning: "calls refused because the bulkhead was full (`overloaded`)",
    },
    Metric {
        name: "retries",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["dependency"],
        emitted_by: "kosha-resilience `policy.rs`",
        meaning: "attempts after the first",
    },
    Metric {
        name: "retry_budget_exhausted",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["dependency"],
        emitted_by: "kosha-resilience `budget.rs`",
        meaning: "retries not made because the retry budget was empty",
    },
    Metric {
        name: "hedges",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["dependency", "outcome"],
        emitted_by: "kosha-resilience `hedge.rs` (a due hedge of a hedged read)",
        meaning: "`outcome`: `won` (the hedge's answer was used), `lost` (the primary answered \
                  first, or both failed), `budget_exhausted` (due but the hedge budget was \
                  empty), `refused` (due but the breaker, deadline or bulkhead said no) \
                  (SPEC §12)",
    },
    Metric {
        name: "rate_limit",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["decision", "bucket"],
        emitted_by: "kosha-resilience `rate_limit.rs` (per `tools/call`)",
        meaning: "`decision`: `allowed`, `limited` (a `rate_limited` tool error) or `fail_open` (state table \
                  unreachable, SPEC §10); `bucket`: `client` or `user` (`KOSHA_RATE_KEY`, SPEC §6)",
    },
    Metric {
        name: "authz",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["decision", "tool"],
        emitted_by: "mcp-gateway `authz.rs` (every `tools/call` the policies decide)",
        meaning: "`decision`: `allow`, `forbid` (the tool error `forbidden`) or `confirm` (the \
                  call needs its person's yes, SPEC §5b); `tool` is a catalogue name (SPEC §5a, \
                  §12)",
    },
    Metric {
        name: "shed",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["reason"],
        emitted_by: "mcp-gateway `http/mod.rs`, `server.rs`, `tools/call.rs`",
        meaning: "calls refused without calling a dependency; `reason`: `in_flight`, \
                  `min_budget`, `breaker_open`, `forced_open`",
    },
    Metric {
        name: "degraded",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["tool", "reason"],
        emitted_by: "mcp-gateway `tools/observe.rs` (a result with `degraded: true`)",
        meaning: "degraded answers (SPEC §10); `reason` is the result's `degraded_reason`",
    },
    Metric {
        name: "chaos_applied",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &[],
        emitted_by: "mcp-gateway `chaos.rs`",
        meaning: "honoured chaos headers (SPEC §9)",
    },
    Metric {
        name: "chaos_rejected",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["reason"],
        emitted_by: "mcp-gateway `chaos.rs`",
        meaning: "refused chaos headers, by reason",
    },
    Metric {
        name: "confirmations",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["tool", "outcome"],
        emitted_by: "mcp-gateway `confirm/mod.rs` (a write a policy says needs its person's yes)",
        meaning: "`outcome`: `asked` (a question sent), `expired` (a state past its TTL, asked \
                  again), `accepted`, `declined`, `cancelled`, `invalid` (a forged or rebound \
                  state, or no usable answer), `unreachable` (`confirmation_required`: the \
                  client cannot ask), `unavailable` (the sealing key unreadable), `internal` \
                  (SPEC §5b)",
    },
    Metric {
        name: "deadline_exceeded",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &["hop"],
        emitted_by: "kosha-resilience `policy.rs` (`hop` = dependency), mcp-gateway \
                     `server.rs` (`hop` = `gateway`)",
        meaning: "calls that ran out of time before or during the hop",
    },
    Metric {
        name: "screening_store_failed",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &[],
        emitted_by: "mcp-gateway `tools/screen_entity.rs`",
        meaning: "screening answers given but not stored in the state table (SPEC §4, §10); \
                  `get_screening_result` may not find them",
    },
    Metric {
        name: "outbox_published",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &[],
        emitted_by: "outbox-relay `relay.rs`",
        meaning: "`ops.outbox` events SQS accepted and the relay marked published",
    },
    Metric {
        name: "outbox_refused",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &[],
        emitted_by: "outbox-relay `relay.rs`",
        meaning: "entries SQS refused in a `SendMessageBatch`; they stay unpublished for the \
                  next run",
    },
    Metric {
        name: "outbox_swept",
        kind: Kind::Counter,
        unit: Some(Unit::Count),
        dimensions: &[],
        emitted_by: "outbox-relay `relay.rs` (after each run)",
        meaning: "published `ops.outbox` events deleted past their retention (7 days by default)",
    },
    Metric {
        name: "outbox_pending",
        kind: Kind::Gauge,
        unit: Some(Unit::Count),
        dimensions: &[],
        emitted_by: "outbox-relay `relay.rs` (after each run)",
        meaning: "unpublished `ops.outbox` rows",
    },
    Metric {
        name: "outbox_lag_seconds",
        kind: Kind::Gauge,
        unit: Some(Unit::Seconds),
        dimensions: &[],
        emitted_by: "outbox-relay `relay.rs` (after each run)",
        meaning: "age of the oldest unpublished `ops.outbox` row (0 when none)",
    },
];

/// The metric `name`, if the catalogue has it.
pub fn find(name: &str) -> Option<&'static Metric> {
    CATALOGUE.iter().find(|m| m.name == name)
}

/// The CloudWatch unit name (`Count`, `Milliseconds`, or `None`).
pub fn unit_name(unit: Option<Unit>) -> &'static str {
    match unit {
        None => "None",
        Some(Unit::Count) => "Count",
        Some(Unit::Milliseconds) => "Milliseconds",
        Some(Unit::Seconds) => "Seconds",
        Some(Unit::Bytes) => "Bytes",
        Some(Unit::Percent) => "Percent",
        Some(_) => "None",
    }
}

/// Describes every catalogued metric's unit to the installed recorder, so EMF documents carry
/// it (`"Unit": "Milliseconds"`).
pub fn describe() {
    for m in CATALOGUE {
        let Some(unit) = m.unit else { continue };
        match m.kind {
            Kind::Counter => metrics::describe_counter!(m.name, unit, m.meaning),
            Kind::Gauge => metrics::describe_gauge!(m.name, unit, m.meaning),
            Kind::Histogram => metrics::describe_histogram!(m.name, unit, m.meaning),
        }
    }
}

/// The catalogue as the Markdown table of `docs/metrics.md`.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| metric | type | unit | dimensions | emitted by | meaning |\n|---|---|---|---|---|---|\n",
    );
    for m in CATALOGUE {
        let dims = if m.dimensions.is_empty() {
            "—".to_owned()
        } else {
            m.dimensions
                .iter()
                .map(|d| format!("`{d}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            m.name,
            m.kind.as_str(),
            unit_name(m.unit),
            dims,
            m.emitted_by,
            m.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests;
