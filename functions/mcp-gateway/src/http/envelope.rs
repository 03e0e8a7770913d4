//! The JSON-RPC 2.0 envelope check, run on every `POST /mcp` body before anything costs a
//! token or reaches rmcp (JSON-RPC 2.0 §4, §5; SPEC §3).
//!
//! - **One parse:** the body is read once, by [`kosha_contract::json::parse`], within
//!   [`Limits::REQUEST`] (depth 32, 256 keys per object, 10,000 values); the checks below and
//!   rmcp's typed check read that one value (a plain `tools/call` skips the typed check,
//!   `plain_tools_call`). A message over a bound is −32600 with id `null`
//!   and a message naming the bound, at the cost of one scan (no map of 90,000 keys is built).
//! - **What it checks:** the body is JSON (else −32700 Parse error); it is one object, not a
//!   batch; `jsonrpc` is `"2.0"`; `id`, when present, is a string or an integer (MCP forbids a
//!   null request id; integers up to 2^64 − 1, see [`super::ids`]); `method` is a string;
//!   `params`, when present, is an object or an array; a message without `method` is a
//!   response (exactly one of `result`, `error`). Any of these failing is −32600 Invalid
//!   Request. Then the params of a method rmcp knows must fit it (`tools/call` needs an object
//!   with a string `name`): else −32602 Invalid params. An unknown method whose params rmcp
//!   cannot hold (an array) is −32601 (HTTP 404, as rmcp answers unknown methods).
//! - **Duplicate keys** in the message or at the top level of `params` are −32600 (id `null`
//!   when `id` is the duplicate); a duplicate at the top level of `params.arguments` passes,
//!   reported in [`Envelope::duplicate_argument`] for the tool call to refuse as
//!   `invalid_argument` (SPEC §3). Keys are compared decoded (`"i\u0064"` is `"id"`).
//! - **What it returns:** the message's `id` and `method` and the parsed message
//!   ([`Envelope`]), or an [`EdgeError`] (`Parse`, `InvalidRequest`, `InvalidParams`,
//!   `MethodNotFound`) whose `id` is the request's id when that is a string or an integer,
//!   else `null` (JSON-RPC 2.0 §4, §5). Caller text in messages is clipped ([`clip`]).
//! - **Why here:** rmcp answers envelopes it cannot deserialize with 415 and a plain-text
//!   body, and by then the rate limiter has spent a token on them.
//! - **Protocol versions** (`initialize`'s `params.protocolVersion`, `params._meta`'s
//!   `io.modelcontextprotocol/protocolVersion`) longer than [`ECHO_MAX_CHARS`] are −32600:
//!   a revision is a date (`2025-11-25`), and rmcp quotes these values whole in its refusals
//!   and WARN lines (a 1 MB version made a 1 MB reply and a 1 MB log line).
//! - **Valid JSON that serde_json cannot hold** (a number beyond `f64` such as `1e400`) is
//!   not a parse error: it is −32600. Invalid UTF-8 and lone surrogates (`"\ud800"`) are
//!   −32700.

use kosha_contract::json::{self, Fault, Limits, Parsed};
use rmcp::model::{
    CallToolRequestMethod, CancelTaskMethod, CancelledNotificationMethod, ClientJsonRpcMessage,
    ClientNotification, ClientRequest, CompleteRequestMethod, ConstString, DiscoverRequestMethod,
    GetPromptRequestMethod, GetSkillRequestMethod, GetTaskMethod, InitializeResultMethod,
    InitializedNotificationMethod, ListPromptsRequestMethod, ListResourceTemplatesRequestMethod,
    ListResourcesRequestMethod, ListSkillsRequestMethod, ListToolsRequestMethod, PingRequestMethod,
    ProgressNotificationMethod, ReadResourceDirectoryRequestMethod, ReadResourceRequestMethod,
    RootsListChangedNotificationMethod, SetLevelRequestMethod, SubscribeRequestMethod,
    SubscriptionsListenRequestMethod, UnsubscribeRequestMethod, UpdateTaskMethod,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::EdgeError;
use super::ids;
use kosha_contract::echo::{ECHO_MAX_CHARS, clip};

/// What the edge needs of a message that passed the check.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The request id (a string or an integer); `None` for a notification or a response.
    pub id: Option<Value>,
    /// The method; `None` for a response.
    pub method: Option<String>,
    /// A key that appears twice at the top level of `params.arguments` (decoded, unclipped).
    pub duplicate_argument: Option<String>,
    /// The whole message, as parsed (with [`ids::EDGE_ID`] in place of an id that
    /// [`ids::needs_mapping`]).
    pub message: Value,
}

/// Checks `body` as one JSON-RPC 2.0 message from a client sent at protocol `revision` (its
/// `MCP-Protocol-Version` header; when absent, `params._meta`'s
/// `io.modelcontextprotocol/protocolVersion`).
///
/// A request for a method this server does not serve is −32601 whatever its params (unknown
/// comes before malformed): every method but `tools/call`, `tools/list` and
/// `server/discover`, and before 2026-07-28 `initialize` and `ping` (removed in 2026-07-28,
/// SEP-2575). It is answered as rmcp answers −32601: HTTP 404 from 2026-07-28 on, a 200
/// before (where a 404 means "session not found" to a client).
///
/// # Errors
/// An [`EdgeError`] as described in the module docs.
pub fn check(body: &[u8], revision: Option<&str>) -> Result<Envelope, EdgeError> {
    let Parsed {
        mut value,
        duplicate,
    } = match json::parse(body, Limits::REQUEST, json::watch_jsonrpc) {
        Ok(parsed) => parsed,
        Err(Fault::Syntax(_)) if std::str::from_utf8(body).is_err() => {
            return Err(EdgeError::Parse {
                message: "parse error: body is not valid UTF-8".to_owned(),
            });
        }
        Err(Fault::Syntax(e)) => {
            return Err(EdgeError::Parse {
                message: parse_message(&e),
            });
        }
        Err(Fault::Limit(limit)) => {
            return Err(invalid(Value::Null, format!("message too large: {limit}")));
        }
        Err(Fault::Unrepresentable) => {
            return Err(invalid(Value::Null, "the JSON holds a number out of range"));
        }
    };
    // The parsed value is kept whole and borrowed: rmcp's typed parse below reads it in place.
    let mut envelope = check_envelope(as_message(&value)?)?;
    if let Some(dup) = duplicate {
        let quoted = clip(&dup.key);
        let id = if dup.path.is_empty() && dup.key == "id" {
            Value::Null
        } else {
            reply_id(envelope.id.as_ref())
        };
        if dup.is_under(&["params", "arguments"]) {
            envelope.duplicate_argument = Some(dup.key);
        } else if dup.is_under(&["params"]) {
            let why = format!("duplicate key in params: {quoted}");
            return Err(invalid(id, why));
        } else {
            let why = format!("duplicate key in the message: {quoted}");
            return Err(invalid(id, why));
        }
    }
    if envelope.id.as_ref().is_some_and(ids::needs_mapping) {
        ids::replace(&mut value);
    }
    let message = as_message(&value)?;
    if let Some(version) = overlong_revision(message) {
        let why = format!("protocol version is not a revision: {}", clip(version));
        return Err(invalid(reply_id(envelope.id.as_ref()), why));
    }
    // `None`: a plain `tools/call`, which rmcp's typed parse is sure to take as one.
    let parsed = match envelope.id.is_some() && plain_tools_call(message) {
        true => None,
        false => Some(ClientJsonRpcMessage::deserialize(&value)),
    };
    let Some(method) = &envelope.method else {
        return match parsed {
            Some(Ok(_)) => Ok(envelope),
            _ => Err(invalid(Value::Null, "not a valid JSON-RPC response")),
        };
    };
    let id = envelope.id.clone().unwrap_or(Value::Null);
    if method == "tools/call"
        && let Err(why) = check_tools_call_params(message.get("params"))
    {
        return Err(EdgeError::InvalidParams {
            id,
            message: why.to_owned(),
        });
    }
    let revision = revision.or_else(|| meta_revision(message));
    let stateless = revision.is_some_and(|r| r >= STATELESS_REVISION);
    if envelope.id.is_some() && !served(method, stateless) {
        let why = format!("method not found: {}", clip(method));
        return Err(EdgeError::MethodNotFound {
            id,
            message: why,
            stateless,
        });
    }
    // rmcp files a known method whose params do not fit its type under its catch-all
    // (`CustomRequest`), and would answer −32601 as if the method were unknown.
    let fits = match &parsed {
        None => true,
        Some(Ok(ClientJsonRpcMessage::Request(r))) => {
            !matches!(r.request, ClientRequest::CustomRequest(_))
        }
        Some(Ok(ClientJsonRpcMessage::Notification(n))) => {
            !matches!(n.notification, ClientNotification::CustomNotification(_))
        }
        Some(Ok(_)) => true,
        Some(Err(_)) => false,
    };
    let known: &[&str] = if envelope.id.is_some() {
        &KNOWN_REQUESTS
    } else {
        &KNOWN_NOTIFICATIONS
    };
    if !fits && known.contains(&method.as_str()) {
        let why = format!("params do not fit method {}", clip(method));
        return Err(EdgeError::InvalidParams {
            id,
            message: why.to_owned(),
        });
    }
    if matches!(parsed, Some(Err(_))) {
        // An unknown method with params rmcp cannot hold (an array): unknown comes first.
        let why = format!("method not found: {}", clip(method));
        return Err(EdgeError::MethodNotFound {
            id,
            message: why,
            stateless,
        });
    }
    envelope.message = value;
    Ok(envelope)
}

/// The message object, or −32600 for any other JSON.
fn as_message(value: &Value) -> Result<&Map<String, Value>, EdgeError> {
    match value {
        Value::Object(m) => Ok(m),
        Value::Array(_) => Err(invalid(Value::Null, "JSON-RPC batches are not supported")),
        _ => Err(invalid(Value::Null, "a JSON-RPC message must be an object")),
    }
}

/// The first protocol revision without the initialize handshake (SEP-2575); revisions are
/// dates, so they compare as strings.
const STATELESS_REVISION: &str = "2026-07-28";

/// Whether this server answers request `method` (it declares only the tools capability).
fn served(method: &str, stateless: bool) -> bool {
    match method {
        "tools/call" | "tools/list" | "server/discover" => true,
        "initialize" | "ping" => !stateless,
        _ => false,
    }
}

/// `params._meta["io.modelcontextprotocol/protocolVersion"]`, when a string.
fn meta_revision(message: &Map<String, Value>) -> Option<&str> {
    message
        .get("params")?
        .get("_meta")?
        .get("io.modelcontextprotocol/protocolVersion")?
        .as_str()
}

/// A protocol version in the message longer than [`ECHO_MAX_CHARS`] characters:
/// `initialize`'s `params.protocolVersion` or `params._meta`'s
/// `io.modelcontextprotocol/protocolVersion`.
fn overlong_revision(message: &Map<String, Value>) -> Option<&str> {
    let params = message.get("params")?;
    let initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
    let asked = initialize
        .then(|| params.get("protocolVersion").and_then(Value::as_str))
        .flatten();
    [asked, meta_revision(message)]
        .into_iter()
        .flatten()
        .find(|v| v.chars().count() > ECHO_MAX_CHARS)
}

/// An [`EdgeError::InvalidRequest`] answered with `id`.
fn invalid(id: Value, message: impl Into<String>) -> EdgeError {
    EdgeError::InvalidRequest {
        id,
        message: message.into(),
    }
}

/// Every request method a client may send that rmcp has a type for.
const KNOWN_REQUESTS: [&str; 21] = [
    PingRequestMethod::VALUE,
    InitializeResultMethod::VALUE,
    DiscoverRequestMethod::VALUE,
    CompleteRequestMethod::VALUE,
    SetLevelRequestMethod::VALUE,
    GetPromptRequestMethod::VALUE,
    ListPromptsRequestMethod::VALUE,
    ListResourcesRequestMethod::VALUE,
    ListResourceTemplatesRequestMethod::VALUE,
    ReadResourceRequestMethod::VALUE,
    SubscriptionsListenRequestMethod::VALUE,
    SubscribeRequestMethod::VALUE,
    UnsubscribeRequestMethod::VALUE,
    CallToolRequestMethod::VALUE,
    ListToolsRequestMethod::VALUE,
    GetTaskMethod::VALUE,
    UpdateTaskMethod::VALUE,
    CancelTaskMethod::VALUE,
    ListSkillsRequestMethod::VALUE,
    GetSkillRequestMethod::VALUE,
    ReadResourceDirectoryRequestMethod::VALUE,
];

/// Every notification method a client may send that rmcp has a type for.
const KNOWN_NOTIFICATIONS: [&str; 4] = [
    CancelledNotificationMethod::VALUE,
    ProgressNotificationMethod::VALUE,
    InitializedNotificationMethod::VALUE,
    RootsListChangedNotificationMethod::VALUE,
];

/// The message for a parse error: what is wrong and where, never input text. serde_json says
/// "unexpected end of hex escape" for a lone leading surrogate, so `\u` faults get our words.
fn parse_message(e: &serde_json::Error) -> String {
    let message = e.to_string();
    let (line, column) = (e.line(), e.column());
    if message.contains("hex escape") || message.contains("unicode code point") {
        format!(
            "parse error: a string holds an invalid \\u escape (a lone surrogate or a bad \
             code point) at line {line} column {column}"
        )
    } else {
        // serde_json's syntax messages name the fault and its position, never input text.
        format!("parse error: body is not valid JSON: {message}")
    }
}

/// The `id` of the message in `body`, for a refusal that did not check its envelope (SPEC §5:
/// a 401 or 403 echoes the request's id when the body could be parsed): [`reply_id`] of the
/// `id` of a JSON object, else `null` (not JSON, not an object, a duplicate `id`).
pub fn request_id(body: &[u8]) -> Value {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<Value>,
    }
    // A struct also deserialises from an array (`[1]`); only an object is a message.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Value::Null;
    }
    serde_json::from_slice::<Id>(body)
        .map(|message| reply_id(message.id.as_ref()))
        .unwrap_or(Value::Null)
}

/// The `id` to answer a refused message with: its own when a string or an integer (any size,
/// or a float form [`usable_id`] accepts), else `null`: JSON-RPC 2.0 §4 says numeric ids
/// SHOULD NOT have fractional parts, and `1.5` or `1e29` may not survive a round trip.
fn reply_id(id: Option<&Value>) -> Value {
    match id {
        Some(v @ Value::String(_)) => v.clone(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Value::Number(n.clone()),
        Some(v @ Value::Number(_)) if usable_id(v) => v.clone(),
        _ => Value::Null,
    }
}

/// Whether `id` is a JSON-RPC id this edge answers: a string, or an integer from −2^63 to
/// 2^64 − 1 (written `7`, `7.0` or `7e0`; float forms only below 2^53, where they are exact).
/// Those rmcp cannot hold are mapped around it ([`super::ids`]).
fn usable_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
        }
        _ => false,
    }
}

/// The checks of JSON-RPC 2.0 §4 and §5 on one message object.
fn check_envelope(message: &Map<String, Value>) -> Result<Envelope, EdgeError> {
    let id = message.get("id");
    let invalid = |why: &str| Err(invalid(reply_id(id), why));
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("jsonrpc must be \"2.0\"");
    }
    if let Some(params) = message.get("params")
        && !(params.is_object() || params.is_array())
    {
        return invalid("params must be an object or an array");
    }
    let has_result = message.contains_key("result");
    let has_error = message.contains_key("error");
    match message.get("method") {
        Some(Value::String(method)) => {
            if has_result || has_error {
                return invalid("a request carries no result or error");
            }
            if id.is_some_and(|id| !usable_id(id)) {
                return invalid("id must be a string or an integer");
            }
            Ok(Envelope {
                id: id.cloned(),
                method: Some(method.clone()),
                duplicate_argument: None,
                message: Value::Null,
            })
        }
        Some(_) => invalid("method must be a string"),
        // A response (to a server request; this server sends none): the edge answers 202.
        None if has_result != has_error => Ok(Envelope {
            id: None,
            method: None,
            duplicate_argument: None,
            message: Value::Null,
        }),
        None => invalid("a request needs a method"),
    }
}

/// `tools/call` params: an object with a string `name` and, when present, object `arguments`.
/// Whether `message` is a `tools/call` request that rmcp's typed parse is sure to take as a
/// `CallToolRequest`, read off the parsed value, so that parse is not paid twice per call
/// (rmcp parses the body again; its parse of an untagged request enum cost ~30,000
/// instructions here, issue 29). It holds only `jsonrpc`, `id`, `method` and `params`. Its
/// `params` has a string `name`. `arguments` and `_meta` are absent, null or objects,
/// `requestState` is absent, null or a string, and there is no `inputResponses`. Any other
/// key of `params` is ignored by rmcp 3.11's `CallToolRequestParams`. Anything else takes
/// the typed parse; a test holds this against rmcp's own verdicts.
fn plain_tools_call(message: &Map<String, Value>) -> bool {
    let Some(Value::Object(params)) = message.get("params") else {
        return false;
    };
    message.get("method").and_then(Value::as_str) == Some("tools/call")
        && message
            .keys()
            .all(|k| matches!(k.as_str(), "jsonrpc" | "id" | "method" | "params"))
        && params.get("name").is_some_and(Value::is_string)
        && params.iter().all(|(key, v)| match key.as_str() {
            "arguments" | "_meta" => v.is_null() || v.is_object(),
            "requestState" => v.is_null() || v.is_string(),
            "inputResponses" => false,
            _ => true,
        })
}

fn check_tools_call_params(params: Option<&Value>) -> Result<(), &'static str> {
    let Some(Value::Object(params)) = params else {
        return Err("tools/call params must be an object");
    };
    if !params.get("name").is_some_and(Value::is_string) {
        return Err("tools/call params need a string name");
    }
    match params.get("arguments") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(_) => Err("tools/call arguments must be an object"),
    }
}

#[cfg(test)]
mod tests;
