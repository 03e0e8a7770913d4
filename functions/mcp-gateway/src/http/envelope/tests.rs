//! Tests of the JSON-RPC envelope checks (the parent module).

use super::*;
use serde_json::json;

use crate::jsonrpc as rpc;
use axum::http::StatusCode;

#[test]
fn a_plain_tools_call_is_one_rmcps_typed_parse_takes_as_a_tool_call() {
    let shapes = [
        json!({"name": "get_transaction"}),
        json!({"name": "get_transaction", "arguments": {"transaction_id": "txn_000001"}}),
        json!({"name": "x", "arguments": null, "_meta": null, "requestState": null}),
        json!({"name": "x", "_meta": {"progressToken": 3, "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        json!({"name": "x", "requestState": "opaque", "extra": [1, 2]}),
        json!({"name": "x", "arguments": [1]}),
        json!({"name": "x", "_meta": "text"}),
        json!({"name": "x", "_meta": {"progressToken": {"not": "a token"}}}),
        json!({"name": "x", "requestState": 5}),
        json!({"name": "x", "inputResponses": {"a": 1}}),
        json!({"name": 5}),
        json!({"arguments": {}}),
        json!([]),
    ];
    let mut plain = 0;
    for params in shapes {
        for extra in [
            None,
            Some(("result", json!({}))),
            Some(("error", json!({}))),
        ] {
            let mut message =
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
            if let Some((k, v)) = &extra {
                message[*k] = v.clone();
            }
            let Value::Object(m) = &message else {
                unreachable!()
            };
            if !plain_tools_call(m) {
                continue;
            }
            plain += 1;
            let typed = ClientJsonRpcMessage::deserialize(&message);
            assert!(
                matches!(
                    &typed,
                    Ok(ClientJsonRpcMessage::Request(r)) if matches!(r.request, ClientRequest::CallToolRequest(_))
                ),
                "{message}: {typed:?}"
            );
        }
    }
    assert_eq!(
        plain, 6,
        "the six plain shapes, each without result or error"
    );
}

/// What a refusal answers.
struct Rejection {
    status: StatusCode,
    code: i32,
    id: Value,
    message: String,
}

fn answer(e: EdgeError) -> Rejection {
    let parts = e.parts();
    Rejection {
        status: parts.status,
        code: parts.code,
        id: e.id(),
        message: e.message(),
    }
}

fn rejected(body: &str) -> Rejection {
    answer(check(body.as_bytes(), None).expect_err(body))
}

#[test]
fn valid_requests_notifications_and_responses_pass() {
    let call = check(
        br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{}}}"#,
        None,
    )
    .unwrap();
    assert_eq!(call.id, Some(json!("a")));
    let note = check(
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        None,
    )
    .unwrap();
    assert_eq!(note.id, None);
    let note_call = check(
        br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
        None,
    )
    .unwrap();
    assert_eq!(note_call.id, None);
    // An unserved request method is −32601 here, in a 200 before 2026-07-28 and a 404
    // from then on, as rmcp answers it.
    let unknown = br#"{"jsonrpc":"2.0","id":7,"method":"tools/destroy","params":{}}"#;
    let r = answer(check(unknown, None).unwrap_err());
    assert_eq!((r.status, r.code), (StatusCode::OK, rpc::METHOD_NOT_FOUND));
    let r = answer(check(unknown, Some("2026-07-28")).unwrap_err());
    assert_eq!(
        (r.status, r.code),
        (StatusCode::NOT_FOUND, rpc::METHOD_NOT_FOUND)
    );
    let unknown_note = check(
        br#"{"jsonrpc":"2.0","method":"notifications/x","params":{}}"#,
        None,
    );
    assert!(unknown_note.is_ok());
    let response = check(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#, None).unwrap();
    assert_eq!(response.method, None);
    assert!(check(br#"{"jsonrpc":"2.0","id":7.0,"method":"ping"}"#, None).is_ok());
    // Integer ids up to 2^64 − 1 are ids (JSON-RPC 2.0 §4), mapped around rmcp.
    let big = check(
        br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
        None,
    )
    .unwrap();
    assert_eq!(big.id, Some(json!(u64::MAX)));
    assert_eq!(big.message["method"], "ping");
}

#[test]
fn malformed_json_is_a_parse_error() {
    for body in [
        r#"{"jsonrpc": "2.0", "id": 1, "method": "#,
        "",
        "nul",
        "{}}",
    ] {
        let r = rejected(body);
        assert_eq!((r.code, r.id), (rpc::PARSE_ERROR, Value::Null), "{body}");
    }
}

#[test]
fn invalid_utf8_and_lone_surrogates_are_parse_errors_saying_so() {
    let r = answer(
        check(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}",
            None,
        )
        .unwrap_err(),
    );
    assert_eq!((r.code, r.id), (rpc::PARSE_ERROR, Value::Null));
    assert_eq!(r.message, "parse error: body is not valid UTF-8");
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\ud800"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\udc00x"}}"#,
    ] {
        let r = rejected(body);
        assert_eq!((r.code, &r.id), (rpc::PARSE_ERROR, &Value::Null), "{body}");
        assert!(r.message.contains("lone surrogate"), "{}", r.message);
    }
}

#[test]
fn json_serde_cannot_hold_is_an_invalid_request_not_a_parse_error() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let huge = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":1e400}}"#;
    for body in [deep.as_str(), huge] {
        let r = rejected(body);
        assert_eq!((r.code, r.id), (rpc::INVALID_REQUEST, Value::Null));
    }
    // Unbalanced within the bounds is a parse error; past the depth bound the parse stops
    // there (the rest is never read), so the same depth unbalanced is over the bound too.
    assert_eq!(rejected("[[[").code, rpc::PARSE_ERROR);
    let r = rejected(&"[".repeat(200));
    assert_eq!(r.code, rpc::INVALID_REQUEST);
    assert!(r.message.contains("32"), "{}", r.message);
}

#[test]
fn envelope_errors_are_invalid_requests_echoing_only_string_or_number_ids() {
    for (body, id) in [
        (r#"{"id":1,"method":"ping"}"#, json!(1)),
        (r#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#, json!("x")),
        (r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#, json!(1)),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":1e29,"method":"ping"}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc":"1.0","id":7.0,"method":"ping"}"#, json!(7.0)),
        (r#"{"jsonrpc":"2.0","id":2,"method":42}"#, json!(2)),
        (r#"{"jsonrpc":"2.0","id":2,"method":null}"#, json!(2)),
        (r#"{"jsonrpc":"2.0","id":3}"#, json!(3)),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"ping","result":{}}"#,
            json!(3),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}"#,
            json!(4),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":5}"#,
            json!(4),
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"result":{},"error":{}}"#,
            json!(5),
        ),
        ("[]", Value::Null),
        ("42", Value::Null),
    ] {
        let r = rejected(body);
        assert_eq!((r.code, &r.id), (rpc::INVALID_REQUEST, &id), "{body}");
    }
}

#[test]
fn a_protocol_version_too_long_for_a_revision_is_refused_clipped() {
    // Attack pass of 2026-12-01 (commit ce42f57): rmcp quoted a 1 MB params.protocolVersion whole, in its
    // reply and in a WARN line.
    let long = "v".repeat(1_000_000);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": long, "capabilities": {},
                   "clientInfo": {"name": "x", "version": "1"}}});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "x", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": long}}});
    for (body, id) in [(initialize, json!(1)), (call, json!(2))] {
        let r = answer(check(body.to_string().as_bytes(), Some("2025-11-25")).unwrap_err());
        assert_eq!((r.code, &r.id), (rpc::INVALID_REQUEST, &id));
        assert!(
            r.message
                .starts_with("protocol version is not a revision: vvv")
        );
        assert!(r.message.len() < 120, "{} bytes", r.message.len());
    }
    // A revision-sized version passes to rmcp, which negotiates it.
    let ok = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize",
        "params": {"protocolVersion": "2099-01-01", "capabilities": {},
                   "clientInfo": {"name": "x", "version": "1"}}});
    assert!(check(ok.to_string().as_bytes(), Some("2025-11-25")).is_ok());
}

#[test]
fn a_duplicate_argument_does_not_hide_a_duplicate_in_params_or_the_message() {
    let body = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"a":1,"a":2},"name":"x","name":"x"}}"#;
    let r = rejected(body);
    assert_eq!((r.code, r.id), (rpc::INVALID_REQUEST, json!(3)));
    assert_eq!(r.message, "duplicate key in params: name");
    let body = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"a":2}},"method":"tools/call"}"#;
    assert_eq!(
        rejected(body).message,
        "duplicate key in the message: method"
    );
    let alone = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"a":2}}}"#;
    let passed = check(alone, None).expect("a duplicate argument is the tool's to refuse");
    assert_eq!(passed.duplicate_argument.as_deref(), Some("a"));
}

#[test]
fn a_known_method_with_misshapen_params_is_invalid_params() {
    for body in [
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[1,2]}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":5}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x","arguments":[]}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"ping","params":[1]}"#,
    ] {
        let r = rejected(body);
        assert_eq!((r.code, r.id), (rpc::INVALID_PARAMS, json!(9)), "{body}");
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
    }
    let r = rejected(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[]}"#);
    assert_eq!((r.code, r.id), (rpc::INVALID_PARAMS, Value::Null));
}

#[test]
fn an_unknown_method_with_array_params_is_method_not_found() {
    let body = br#"{"jsonrpc":"2.0","id":"q","method":"tools/destroy","params":[1]}"#;
    let r = answer(check(body, Some("2026-07-28")).unwrap_err());
    assert_eq!((r.code, r.id), (rpc::METHOD_NOT_FOUND, json!("q")));
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[test]
fn unserved_and_removed_methods_are_method_not_found_before_their_params() {
    let meta = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/get",
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":500,"method":"{method}","params":{meta}}}"#);
        let r = answer(check(body.as_bytes(), Some("2026-07-28")).expect_err(method));
        assert_eq!(
            (r.status, r.code, &r.id),
            (StatusCode::NOT_FOUND, rpc::METHOD_NOT_FOUND, &json!(500)),
            "{method}"
        );
        // The revision in _meta alone is enough.
        let r = answer(check(body.as_bytes(), None).expect_err(method));
        assert_eq!(r.code, rpc::METHOD_NOT_FOUND, "{method}");
    }
    // Before 2026-07-28 initialize is served, so misshapen params are still −32602.
    let body = br#"{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}"#;
    let r = answer(check(body, Some("2025-11-25")).unwrap_err());
    assert_eq!(r.code, rpc::INVALID_PARAMS);
    // tools/* stay served at 2026-07-28.
    let body = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}"#;
    let r = answer(check(body, Some("2026-07-28")).unwrap_err());
    assert_eq!(r.code, rpc::INVALID_PARAMS);
}
