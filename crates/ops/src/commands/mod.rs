//! One module per top-level command. To add one: a module here, a variant in `main.rs`'s
//! `Command`, an arm in its dispatch.

pub mod bootstrap;
pub mod breaker;
pub mod chaos;
pub mod issuer;
pub mod policy;
pub mod status;
pub mod token;

/// Writes the `ops_action` audit event (`kosha_runtime::audit::events::OPS_ACTION`) for an
/// operator action that changes the fleet (a breaker forced open or cleared): one JSON line on
/// stderr, `{"audit": true, "event": "ops_action", "action": …, …fields}`, where the operator's
/// terminal or CI log keeps it; the gateways' `breaker_override_observed` is its fleet-side
/// counterpart. `fields` is a JSON object; nothing secret goes in it.
pub fn audit(action: &str, fields: serde_json::Value) {
    let mut event = serde_json::json!({
        "audit": true,
        "event": kosha_runtime::audit::events::OPS_ACTION,
        "action": action,
    });
    if let (Some(out), serde_json::Value::Object(extra)) = (event.as_object_mut(), fields) {
        out.extend(extra);
    }
    eprintln!("{event}");
}

/// A command failed; printed as one line on stderr, exit status 1.
pub type CommandError = Box<dyn std::error::Error + Send + Sync>;
