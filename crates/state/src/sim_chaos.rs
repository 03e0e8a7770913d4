//! `simchaos#<service>` items: screening-sim's own chaos knobs (SPEC §4 `POST /admin/chaos`,
//! issue 12), kept in the state table so a knob set through one instance holds for every
//! instance of the function. An addition to SPEC §8's table (docs/spec.md §8).
//!
//! Attributes: `pk`, `latency_ms` (N), `error_rate` (N, 0–1), `down` (BOOL), `status` (N,
//! the HTTP status of injected errors; absent in items written before issue #33: 503),
//! `retry_after_s` (N, optional: a `Retry-After` sent with them), `set_at` (N, epoch s),
//! `expires_at` (N, epoch s). An item whose `expires_at` has passed is absent. The
//! knobs' meaning and bounds are screening-sim's (`functions/screening-sim/src/chaos.rs`);
//! this module only stores them.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;

use crate::attr::{self, nv, sv};
use crate::{StateError, StateTable};

/// screening-sim's knobs: as stored, and as its `GET /admin/chaos` shows them (the JSON
/// object has these field names; `retry_after_s` is `null` when unset).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SimChaosItem {
    /// Extra latency before every answer, ms.
    pub latency_ms: u64,
    /// Probability in [0, 1] that an answer is a 503.
    pub error_rate: f64,
    /// Every answer is a 503.
    pub down: bool,
    /// HTTP status of injected errors (503 by default; 429 for "too many", issue #33).
    pub status: u16,
    /// `Retry-After` seconds sent with injected errors, if any.
    pub retry_after_s: Option<u64>,
    /// When set, epoch s.
    pub set_at: i64,
    /// When it stops applying, epoch s.
    pub expires_at: i64,
}

/// The status of injected errors in an item that names none (written before issue #33).
pub const DEFAULT_STATUS: u16 = 503;

fn key(service: &str) -> String {
    format!("simchaos#{service}")
}

impl StateTable {
    /// The knobs of `service` in force at `now_s` (consistent read); `None` when unset,
    /// expired or malformed (a malformed item is logged and ignored: chaos is never guessed).
    ///
    /// # Errors
    /// [`StateError::Aws`] when the read fails.
    pub async fn get_sim_chaos(
        &self,
        service: &str,
        now_s: i64,
    ) -> Result<Option<SimChaosItem>, StateError> {
        let Some(item) = self.get_item(key(service)).await? else {
            return Ok(None);
        };
        let item = &item;
        let parsed = (|| {
            Some(SimChaosItem {
                latency_ms: u64::try_from(attr::n_i64(item, "latency_ms")?).ok()?,
                error_rate: attr::n_f64(item, "error_rate").filter(|p| (0.0..=1.0).contains(p))?,
                down: *item.get("down")?.as_bool().ok()?,
                status: match attr::n_i64(item, "status") {
                    None => DEFAULT_STATUS,
                    Some(status) => u16::try_from(status).ok()?,
                },
                retry_after_s: match attr::n_i64(item, "retry_after_s") {
                    None => None,
                    Some(secs) => Some(u64::try_from(secs).ok()?),
                },
                set_at: attr::n_i64(item, "set_at")?,
                expires_at: attr::n_i64(item, "expires_at")?,
            })
        })();
        if parsed.is_none() {
            tracing::warn!(event = "sim_chaos_malformed", service, "ignored");
        }
        Ok(parsed.filter(|k| k.expires_at > now_s))
    }

    /// Sets the knobs of `service` (replacing earlier ones).
    ///
    /// # Errors
    /// [`StateError::Aws`] when the write fails.
    pub async fn put_sim_chaos(
        &self,
        service: &str,
        knobs: &SimChaosItem,
    ) -> Result<(), StateError> {
        let mut put = self
            .client()
            .put_item()
            .table_name(self.name())
            .item("pk", sv(key(service)))
            .item("latency_ms", nv(knobs.latency_ms))
            .item("error_rate", nv(knobs.error_rate))
            .item("down", AttributeValue::Bool(knobs.down))
            .item("status", nv(knobs.status))
            .item("set_at", nv(knobs.set_at))
            .item("expires_at", nv(knobs.expires_at));
        if let Some(secs) = knobs.retry_after_s {
            put = put.item("retry_after_s", nv(secs));
        }
        put.send()
            .await
            .map_err(|e| StateError::aws("PutItem", e))?;
        Ok(())
    }

    /// Clears the knobs of `service`.
    ///
    /// # Errors
    /// [`StateError::Aws`] when the delete fails.
    pub async fn delete_sim_chaos(&self, service: &str) -> Result<(), StateError> {
        self.delete_item(key(service)).await
    }
}
