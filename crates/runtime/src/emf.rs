//! The `metrics` facade written as CloudWatch Embedded Metric Format documents (SPEC §12).
//!
//! [`Emf`] is the process's [`metrics::Recorder`]: counters and gauges are atomics, a
//! histogram keeps every value recorded since the last [`Emf::flush`]. A flush writes one JSON
//! document per line for each label set that has something to say, in namespace
//! [`crate::telemetry::NAMESPACE`]:
//!
//! ```json
//! {"_aws":{"Timestamp":1764769200000,"CloudWatchMetrics":[{"Namespace":"Kosha","Dimensions":[["tool","outcome"]],"Metrics":[{"Name":"tool_duration_ms","Unit":"Milliseconds"}]}]},"tool":"get_transaction","outcome":"ok","tool_duration_ms":[3.1,2.7]}
//! ```
//!
//! - **Dimensions** are the metric's labels, in the macro's order, one dimension set per
//!   document; the properties
//!   set with [`Emf::set_property`] (`RequestId` on Lambda) ride on every document.
//! - **Counters** are written as the count since the last flush, and only when it is not 0;
//!   **gauges** every flush; **histograms** as the array of their values, when there are any.
//! - **No value is lost.** The EMF specification allows at most [`MAX_VALUES`] values in one
//!   metric's array ("Specification: Embedded metric format", target members), so a histogram
//!   with more values since the last flush is written over several documents of at most 100
//!   values each, its label set's counters and gauges in the first only (the split AWS's own
//!   EMF libraries make, `aws-embedded-metrics-java`'s `MAX_DATAPOINTS_PER_METRIC`).
//!
//! **Why our own writer.** `metrics_cloudwatch_embedded` 0.10, which wrote these documents
//! before, keeps a histogram's values in a private channel of 100 between flushes: at about
//! 160 calls a second of one tool in server mode (1 s flushes), 397 of 1,269
//! `tool_duration_ms` values (31 %) were dropped, each drop logging an ERROR line (issue #30).
//! It offers no larger buffer and no split, so this module replaces it.
//!
//! **Cost on the hot path.** A `metrics` macro looks its handle up under a read lock (no
//! writer but the first registration of a key and nothing held across a flush's writing); a
//! counter or gauge is then one atomic operation, a histogram value one push under that
//! histogram's own mutex (held for the push; a flush holds it only to swap the vector out), so
//! recording allocates nothing but the vector's amortised growth.
//!
//! ```
//! use kosha_runtime::emf::Emf;
//!
//! let emf = Emf::new("Kosha");
//! metrics::with_local_recorder(&emf, || {
//!     let histogram = metrics::histogram!("tool_duration_ms", "tool" => "ping");
//!     for ms in 0..250 {
//!         histogram.record(f64::from(ms));
//!     }
//! });
//! let mut out = Vec::new();
//! emf.flush(&mut out).unwrap();
//! let sizes: Vec<usize> = String::from_utf8(out).unwrap().lines()
//!     .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
//!     .map(|doc| doc["tool_duration_ms"].as_array().unwrap().len())
//!     .collect();
//! assert_eq!(sizes, [100, 100, 50]);
//! ```

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Label, Metadata, Recorder, SharedString,
    Unit,
};
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde_json::Value;

/// The most values one metric may carry in one EMF document (EMF specification, target
/// members: an array of at most 100 numbers).
pub const MAX_VALUES: usize = 100;

/// The EMF recorder and writer (module docs). Share one per process: [`Emf::install`] makes it
/// the global recorder.
pub struct Emf {
    namespace: &'static str,
    // `Key` caches its hash in an atomic; it is never changed once in the map.
    #[allow(clippy::mutable_key_type)]
    handles: RwLock<HashMap<Key, Handle>>,
    units: RwLock<HashMap<KeyName, Unit>>,
    properties: Mutex<BTreeMap<&'static str, Value>>,
}

impl std::fmt::Debug for Emf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emf")
            .field("namespace", &self.namespace)
            .field("metrics", &self.handles.read().len())
            .finish()
    }
}

/// One registered metric.
#[derive(Clone)]
enum Handle {
    Counter(Arc<AtomicU64>),
    /// The gauge's `f64` bits (`metrics`' own `GaugeFn` for `AtomicU64`).
    Gauge(Arc<AtomicU64>),
    Histogram(Arc<Samples>),
}

impl Handle {
    fn kind(&self) -> &'static str {
        match self {
            Self::Counter(_) => "counter",
            Self::Gauge(_) => "gauge",
            Self::Histogram(_) => "histogram",
        }
    }
}

/// A histogram's values since the last flush.
#[derive(Default)]
struct Samples(Mutex<Vec<f64>>);

impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().push(value);
    }

    fn record_many(&self, value: f64, count: usize) {
        self.0.lock().extend(std::iter::repeat_n(value, count));
    }
}

impl Samples {
    /// The values so far, leaving an empty vector as large as this interval's (so the next
    /// interval's pushes do not grow it again); an empty interval keeps the vector it has.
    fn take(&self) -> Vec<f64> {
        let mut values = self.0.lock();
        if values.is_empty() {
            return Vec::new();
        }
        let room = Vec::with_capacity(values.len());
        std::mem::replace(&mut *values, room)
    }
}

/// What one metric says in one flush.
enum Reading {
    Count(u64),
    Gauge(f64),
    Values(Vec<f64>),
}

impl Emf {
    /// A recorder writing into CloudWatch namespace `namespace`, with no properties.
    pub fn new(namespace: &'static str) -> Self {
        Self {
            namespace,
            handles: RwLock::new(HashMap::new()),
            units: RwLock::new(HashMap::new()),
            properties: Mutex::new(BTreeMap::new()),
        }
    }

    /// Makes this the process's global `metrics` recorder, for the rest of the process.
    ///
    /// # Errors
    /// A message when a global recorder is already installed.
    pub fn install(self) -> Result<&'static Emf, String> {
        let emf: &'static Emf = Box::leak(Box::new(self));
        metrics::set_global_recorder(emf).map_err(|e| e.to_string())?;
        Ok(emf)
    }

    /// Sets property `name` (a root member of every document from the next flush on, not a
    /// dimension), replacing its previous value.
    pub fn set_property(&self, name: &'static str, value: impl Into<Value>) {
        self.properties.lock().insert(name, value.into());
    }

    /// Writes every metric that has something to say since the last flush (module docs), one
    /// document per line, each with a single `write_all` (so a log line written meanwhile by
    /// another thread never lands inside one), and starts the next interval.
    ///
    /// # Errors
    /// The writer's error; the metrics taken for that flush are then lost.
    pub fn flush(&self, mut out: impl Write) -> io::Result<()> {
        let readings = self.take();
        if readings.is_empty() {
            return Ok(());
        }
        let properties = self.properties.lock().clone();
        let units = self.units.read();
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let mut line = Vec::new();
        for (labels, metrics) in &readings {
            let documents = metrics
                .iter()
                .map(|(_, r)| match r {
                    Reading::Values(v) => v.len().div_ceil(MAX_VALUES),
                    Reading::Count(_) | Reading::Gauge(_) => 1,
                })
                .max()
                .unwrap_or(0);
            for part in 0..documents {
                let members: Vec<(&str, Option<&'static str>, Member<'_>)> = metrics
                    .iter()
                    .filter_map(|(name, reading)| {
                        let member = match reading {
                            Reading::Count(n) if part == 0 => Member::Count(*n),
                            Reading::Gauge(g) if part == 0 => Member::Gauge(*g),
                            Reading::Values(v) => Member::Values(v.chunks(MAX_VALUES).nth(part)?),
                            _ => return None,
                        };
                        let unit = units.get(name.as_str()).map(|u| cloudwatch_unit(*u));
                        Some((name.as_str(), unit, member))
                    })
                    .collect();
                let document = Document {
                    namespace: self.namespace,
                    timestamp,
                    labels,
                    properties: &properties,
                    members: &members,
                };
                serde_json::to_writer(&mut line, &document)?;
                line.push(b'\n');
                out.write_all(&line)?;
                line.clear();
            }
        }
        out.flush()
    }

    /// Flushes into `out()` every `period` from a task on the current tokio runtime (the
    /// first flush one period from now; a tick missed while the process was frozen is
    /// skipped, not caught up). Without a runtime, nothing is spawned and a warning is logged.
    pub fn flush_every<W: Write>(
        &'static self,
        period: Duration,
        out: impl Fn() -> W + Send + 'static,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no tokio runtime: metrics are not flushed periodically");
            return;
        };
        runtime.spawn(async move {
            let start = tokio::time::Instant::now() + period;
            let mut ticks = tokio::time::interval_at(start, period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                ticks.tick().await;
                if let Err(e) = self.flush(out()) {
                    tracing::warn!(error = %e, "metrics flush failed");
                }
            }
        });
    }

    /// Every metric's reading since the last flush, by label set then name (counters at 0 and
    /// histograms without values left out); counters and histograms start again from nothing.
    fn take(&self) -> BTreeMap<Vec<Label>, Vec<(KeyName, Reading)>> {
        let mut readings: BTreeMap<Vec<Label>, Vec<(KeyName, Reading)>> = BTreeMap::new();
        for (key, handle) in self.handles.read().iter() {
            let reading = match handle {
                Handle::Counter(n) => match n.swap(0, Ordering::Relaxed) {
                    0 => continue,
                    n => Reading::Count(n),
                },
                Handle::Gauge(bits) => Reading::Gauge(f64::from_bits(bits.load(Ordering::Relaxed))),
                Handle::Histogram(samples) => match samples.take() {
                    v if v.is_empty() => continue,
                    v => Reading::Values(v),
                },
            };
            let labels = key.labels().cloned().collect();
            readings
                .entry(labels)
                .or_default()
                .push((key.name_shared(), reading));
        }
        for metrics in readings.values_mut() {
            metrics.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        }
        readings
    }

    /// The handle of `key`, registering `new()` on its first use.
    fn handle(&self, key: &Key, new: impl FnOnce() -> Handle) -> Handle {
        if let Some(handle) = self.handles.read().get(key) {
            return handle.clone();
        }
        self.handles
            .write()
            .entry(key.clone())
            .or_insert_with(new)
            .clone()
    }

    fn describe(&self, key: KeyName, unit: Option<Unit>) {
        let mut units = self.units.write();
        match unit {
            Some(unit) => units.insert(key, unit),
            None => units.remove(&key),
        };
    }
}

/// A key registered as one kind and asked for as another: a programming error, logged; the
/// caller gets a handle that records nothing.
fn mismatch(key: &Key, asked: &str, handle: &Handle) {
    tracing::error!(
        metric = key.name(),
        asked,
        registered = handle.kind(),
        "metric registered as another kind; values ignored"
    );
}

impl Recorder for Emf {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, unit);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, unit);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, _: SharedString) {
        self.describe(key, unit);
    }

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        match self.handle(key, || Handle::Counter(Arc::default())) {
            Handle::Counter(n) => Counter::from_arc(n),
            other => {
                mismatch(key, "counter", &other);
                Counter::noop()
            }
        }
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        match self.handle(key, || Handle::Gauge(Arc::default())) {
            Handle::Gauge(bits) => Gauge::from_arc(bits),
            other => {
                mismatch(key, "gauge", &other);
                Gauge::noop()
            }
        }
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        match self.handle(key, || Handle::Histogram(Arc::default())) {
            Handle::Histogram(samples) => Histogram::from_arc(samples),
            other => {
                mismatch(key, "histogram", &other);
                Histogram::noop()
            }
        }
    }
}

/// One EMF document: `_aws` first, then the dimensions' values, the properties, the metrics.
struct Document<'a> {
    namespace: &'a str,
    timestamp: u64,
    labels: &'a [Label],
    properties: &'a BTreeMap<&'static str, Value>,
    members: &'a [(&'a str, Option<&'static str>, Member<'a>)],
}

/// A metric's value in one document.
#[derive(Serialize)]
#[serde(untagged)]
enum Member<'a> {
    Count(u64),
    Gauge(f64),
    Values(&'a [f64]),
}

#[derive(Serialize)]
struct Aws<'a> {
    #[serde(rename = "Timestamp")]
    timestamp: u64,
    #[serde(rename = "CloudWatchMetrics")]
    directives: [Directive<'a>; 1],
}

#[derive(Serialize)]
struct Directive<'a> {
    #[serde(rename = "Namespace")]
    namespace: &'a str,
    #[serde(rename = "Dimensions")]
    dimensions: [Vec<&'a str>; 1],
    #[serde(rename = "Metrics")]
    metrics: Vec<Definition<'a>>,
}

#[derive(Serialize)]
struct Definition<'a> {
    #[serde(rename = "Name")]
    name: &'a str,
    #[serde(rename = "Unit", skip_serializing_if = "Option::is_none")]
    unit: Option<&'static str>,
}

impl Serialize for Document<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let aws = Aws {
            timestamp: self.timestamp,
            directives: [Directive {
                namespace: self.namespace,
                dimensions: [self.labels.iter().map(Label::key).collect()],
                metrics: self
                    .members
                    .iter()
                    .map(|(name, unit, _)| Definition { name, unit: *unit })
                    .collect(),
            }],
        };
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("_aws", &aws)?;
        for label in self.labels {
            map.serialize_entry(label.key(), label.value())?;
        }
        for (name, value) in self.properties {
            map.serialize_entry(name, value)?;
        }
        for (name, _, member) in self.members {
            map.serialize_entry(name, member)?;
        }
        map.end()
    }
}

/// CloudWatch's name of `unit` (`MetricDatum.Unit`; binary multiples map to CloudWatch's
/// decimal names, as CloudWatch has no others).
fn cloudwatch_unit(unit: Unit) -> &'static str {
    match unit {
        Unit::Count => "Count",
        Unit::Percent => "Percent",
        Unit::Seconds => "Seconds",
        Unit::Milliseconds => "Milliseconds",
        Unit::Microseconds => "Microseconds",
        Unit::Nanoseconds => "Nanoseconds",
        Unit::Tebibytes => "Terabytes",
        Unit::Gibibytes => "Gigabytes",
        Unit::Mebibytes => "Megabytes",
        Unit::Kibibytes => "Kilobytes",
        Unit::Bytes => "Bytes",
        Unit::TerabitsPerSecond => "Terabits/Second",
        Unit::GigabitsPerSecond => "Gigabits/Second",
        Unit::MegabitsPerSecond => "Megabits/Second",
        Unit::KilobitsPerSecond => "Kilobits/Second",
        Unit::BitsPerSecond => "Bits/Second",
        Unit::CountPerSecond => "Count/Second",
    }
}

#[cfg(test)]
mod tests;
