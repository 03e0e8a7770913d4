//! The events queue's messages (SPEC §4): what outbox-relay publishes to
//! `KOSHA_EVENTS_QUEUE_URL` for every `ops.outbox` row. Delivery is at least once; consumers
//! dedupe by [`Event::event_id`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Name of the SQS message attribute (String) that carries [`Event::event_type`], so a
/// subscriber can filter without parsing the body.
pub const EVENT_TYPE_ATTRIBUTE: &str = "event_type";

/// One event, the JSON body of one SQS message:
/// `{event_id, type, occurred_at, aggregate_id, payload}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// A ULID, unique per event; the dedupe key.
    pub event_id: String,
    /// [`crate::core_api::DISPUTE_OPENED`] or [`crate::core_api::REVIEW_REQUESTED`].
    #[serde(rename = "type")]
    pub event_type: String,
    /// When the write committed, RFC 3339 UTC.
    pub occurred_at: String,
    /// The record's id (`dsp_…`, `rev_…`).
    pub aggregate_id: String,
    /// The record as core-api answered it (a `Dispute` or a `Review`).
    pub payload: Value,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_type_field_is_named_type_on_the_wire() {
        let event = Event {
            event_id: "01JD8X4ZQ7M2N5P8R3T6V9W0YB".into(),
            event_type: "dispute.opened".into(),
            occurred_at: "2026-12-01T00:00:00Z".into(),
            aggregate_id: "dsp_01JD8X4ZQ7M2N5P8R3T6V9W0YB".into(),
            payload: json!({"dispute_id": "dsp_01JD8X4ZQ7M2N5P8R3T6V9W0YB"}),
        };
        let wire = serde_json::to_value(&event).unwrap();
        assert_eq!(wire["type"], "dispute.opened");
        assert!(wire.get("event_type").is_none());
        assert_eq!(serde_json::from_value::<Event>(wire).unwrap(), event);
    }
}
