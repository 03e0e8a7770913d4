//! `GET /v1/openapi.json` (issue 16): the served document parses, is OpenAPI 3.1, lists every
//! route the router serves and no other, and its key schemas say what the handlers enforce
//! (the same constants, the same id shapes, the same free-text rule).
//!
//! No database: the router runs over a pool to a closed port, so a probe that reaches a
//! handler answers 400 or 503, never the fallback's 404 "no such route".

use std::collections::BTreeSet;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use core_api::db::{self, PoolSettings};
use core_api::routes::{AppState, router};
use kosha_contract::core_api::{
    CURSOR_MAX_CHARS, IDEMPOTENCY_KEY_MAX_CHARS, LIST_LIMIT_MAX, QUERY_MAX_CHARS, REASON_MAX_CHARS,
    TOP_K_DEFAULT, TOP_K_MAX,
};
use kosha_contract::error::ErrorCode;
use kosha_contract::ids::{ACCOUNT, ARTICLE, DISPUTE, REVIEW, TRANSACTION};
use kosha_contract::openapi::{PLAIN_TEXT_PATTERN, QUERY_PATTERN};
use serde_json::{Value, json};

use crate::common::send;

/// Every route of [`router`]: method and OpenAPI path. A new route must be added here and to
/// the document (it is, if registered with `routes!`), or this file fails.
const ROUTES: [(&str, &str); 7] = [
    ("get", "/v1/transactions/{id}"),
    ("get", "/v1/accounts/{id}/transactions"),
    ("post", "/v1/knowledge/search"),
    ("post", "/v1/disputes"),
    ("post", "/v1/reviews"),
    ("get", "/v1/health"),
    ("get", "/v1/openapi.json"),
];

fn app() -> Router {
    let pool = db::build_pool(
        "postgres://nobody@127.0.0.1:1/nothing",
        &PoolSettings::default(),
    )
    .expect("pool");
    router(AppState::new(pool))
}

async fn served() -> Value {
    let reply = send(
        &app(),
        Request::get("/v1/openapi.json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers[header::CONTENT_TYPE], "application/json");
    reply.body
}

fn operation<'a>(doc: &'a Value, method: &str, path: &str) -> &'a Value {
    let op = &doc["paths"][path][method];
    assert!(op.is_object(), "{method} {path} is not in the document");
    op
}

/// The parameter `name` of an operation (header names compare case-insensitively).
fn parameter<'a>(op: &'a Value, name: &str) -> &'a Value {
    op["parameters"]
        .as_array()
        .and_then(|ps| {
            ps.iter().find(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(name))
            })
        })
        .unwrap_or_else(|| panic!("no parameter {name} in {op}"))
}

/// `value`, or the component schema it references (`{"$ref": "#/components/schemas/X"}`).
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str() {
        Some(reference) => schema(
            doc,
            reference
                .strip_prefix("#/components/schemas/")
                .unwrap_or(reference),
        ),
        None => value,
    }
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let s = &doc["components"]["schemas"][name];
    assert!(s.is_object(), "no component schema {name}");
    s
}

#[tokio::test]
async fn the_served_document_is_openapi_3_1_and_matches_the_generated_one() {
    let doc = served().await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "Kosha core-api");
    let generated = serde_json::to_value(core_api::routes::document()).unwrap();
    assert_eq!(doc["paths"], generated["paths"]);
    assert_eq!(doc["components"], generated["components"]);
}

#[tokio::test]
async fn every_route_of_the_router_is_documented_and_every_documented_one_is_served() {
    let doc = served().await;
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                documented.insert((method.clone(), path.clone()));
            }
        }
    }
    let expected: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(documented, expected);

    // Each documented operation reaches a handler (not the 404/405 fallbacks).
    let app = app();
    for (method, path) in &expected {
        let uri = path
            .replace("/transactions/{id}", "/transactions/txn_000001")
            .replace("/accounts/{id}", "/accounts/acc_0001");
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let request = Request::builder()
            .method(method.clone())
            .uri(&uri)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from("{}"))
            .unwrap();
        let reply = send(&app, request).await;
        assert_ne!(
            reply.status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {uri}"
        );
        assert!(
            !(reply.status == StatusCode::NOT_FOUND && reply.message() == "no such route"),
            "{method} {uri} is documented but not served"
        );
    }

    // A route added with a plain `.route(` would be served without a path item: the router
    // registers every route through `routes!` (which documents it), so none may appear.
    let source = include_str!("../../src/routes/mod.rs");
    for line in source.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        assert!(
            !code.contains(".route("),
            "src/routes/mod.rs adds a route without documenting it: {line}"
        );
    }
}

#[tokio::test]
async fn the_error_body_is_spec_section_7_with_the_stable_codes() {
    let doc = served().await;
    let detail = schema(&doc, "ErrorDetail");
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    let code = resolve(&doc, &detail["properties"]["code"]);
    assert_eq!(code["enum"], json!(codes));
    let mut required: Vec<&str> = detail["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["code", "message"]);
    assert!(detail["properties"]["retry_after_s"].is_object());
    assert!(
        detail["properties"]["dependency"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("postgres"))
    );
    assert_eq!(schema(&doc, "ErrorBody")["required"], json!(["error"]));

    // Every operation answers its failures with that body, 503 with Retry-After.
    for (method, path) in ROUTES {
        let op = operation(&doc, method, path);
        for (status, body) in op["responses"].as_object().unwrap() {
            if status.starts_with('4') || status.starts_with('5') {
                let reference = &body["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    reference, "#/components/schemas/ErrorBody",
                    "{method} {path} {status}"
                );
            }
        }
        assert!(op["responses"]["504"].is_object(), "{method} {path}: 504");
        if path != "/v1/openapi.json" {
            assert!(
                op["responses"]["503"]["headers"]["Retry-After"].is_object(),
                "{method} {path}: 503"
            );
        }
    }
}

#[tokio::test]
async fn bounds_and_shapes_are_the_constants_the_handlers_check() {
    let doc = served().await;

    let search = schema(&doc, "SearchRequest");
    assert_eq!(search["additionalProperties"], false);
    assert_eq!(search["required"], json!(["query"]));
    let query = &search["properties"]["query"];
    assert_eq!(query["maxLength"], QUERY_MAX_CHARS);
    assert_eq!(query["minLength"], 1);
    assert_eq!(query["pattern"], QUERY_PATTERN);
    let top_k = &search["properties"]["top_k"];
    assert_eq!(top_k["minimum"], 1);
    assert_eq!(top_k["maximum"], TOP_K_MAX);
    assert_eq!(top_k["default"], TOP_K_DEFAULT);

    for name in ["DisputeRequest", "ReviewRequest"] {
        let body = schema(&doc, name);
        assert_eq!(body["additionalProperties"], false, "{name}");
        let reason = &body["properties"]["reason"];
        assert_eq!(reason["maxLength"], REASON_MAX_CHARS, "{name}");
        assert_eq!(reason["pattern"], PLAIN_TEXT_PATTERN, "{name}");
        assert_eq!(
            body["properties"]["transaction_id"]["pattern"],
            TRANSACTION.pattern()
        );
    }
    assert_eq!(
        schema(&doc, "DisputeRequest")["properties"]["amount_minor"]["minimum"],
        1
    );

    let list = operation(&doc, "get", "/v1/accounts/{id}/transactions");
    assert_eq!(
        parameter(list, "id")["schema"]["pattern"],
        ACCOUNT.pattern()
    );
    assert_eq!(
        parameter(list, "limit")["schema"]["maximum"],
        LIST_LIMIT_MAX
    );
    assert_eq!(
        parameter(list, "cursor")["schema"]["maxLength"],
        CURSOR_MAX_CHARS
    );
    for bound in ["from", "to"] {
        let any_of = &parameter(list, bound)["schema"]["anyOf"];
        assert_eq!(any_of[0]["format"], "date-time", "{bound}");
        assert_eq!(any_of[1]["maxLength"], 0, "{bound}: empty means no bound");
    }
    let get = operation(&doc, "get", "/v1/transactions/{id}");
    assert_eq!(
        parameter(get, "id")["schema"]["pattern"],
        TRANSACTION.pattern()
    );
    assert_eq!(parameter(get, "X-Kosha-Principal")["required"], false);

    for path in ["/v1/disputes", "/v1/reviews"] {
        let write = operation(&doc, "post", path);
        for name in ["Idempotency-Key", "X-Kosha-Principal"] {
            let p = parameter(write, name);
            assert_eq!(p["in"], "header");
            assert_eq!(p["required"], true, "{path} {name}");
            assert_eq!(p["schema"]["maxLength"], IDEMPOTENCY_KEY_MAX_CHARS);
        }
        assert_eq!(parameter(write, "X-Request-Deadline")["required"], false);
        assert!(write["responses"]["201"].is_object(), "{path}");
    }

    assert_eq!(
        schema(&doc, "Dispute")["properties"]["dispute_id"]["pattern"],
        DISPUTE.pattern()
    );
    assert_eq!(
        schema(&doc, "Review")["properties"]["review_id"]["pattern"],
        REVIEW.pattern()
    );
    assert_eq!(
        schema(&doc, "ArticleHit")["properties"]["article_id"]["pattern"],
        ARTICLE.pattern()
    );
    let transaction = schema(&doc, "Transaction");
    assert_eq!(
        transaction["properties"]["status"]["enum"],
        json!(["booked", "pending", "reversed"])
    );
    assert_eq!(
        transaction["properties"]["booked_at"]["format"],
        "date-time"
    );
    let page = schema(&doc, "TransactionPage");
    assert_eq!(
        page["properties"]["transactions"]["maxItems"],
        LIST_LIMIT_MAX
    );
    let mut page_required: Vec<&str> = page["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    page_required.sort_unstable();
    assert_eq!(page_required, ["next_cursor", "transactions"]);
    assert_eq!(
        schema(&doc, "SearchResponse")["properties"]["results"]["maxItems"],
        TOP_K_MAX
    );
}

/// The query's pattern and the handler agree on every character a one-character query could
/// hold in the Basic Multilingual Plane's first block and on the white-space and control
/// characters beyond it: "not blank" and "no control characters" mean the same in both.
#[test]
fn the_query_pattern_accepts_exactly_what_the_handler_accepts() {
    let pattern = regex::Regex::new(QUERY_PATTERN).unwrap();
    let plain = regex::Regex::new(PLAIN_TEXT_PATTERN).unwrap();
    let extra = [
        0x1680, 0x2000, 0x200a, 0x200b, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff,
    ];
    for c in (0u32..0x3100).chain(extra).filter_map(char::from_u32) {
        for text in [c.to_string(), format!("a{c}"), format!("{c}b{c}")] {
            let accepted =
                core_api::routes::knowledge::parse_request(json!({"query": text})).is_ok();
            assert_eq!(
                pattern.is_match(&text),
                accepted,
                "query {text:?} (U+{:04X})",
                u32::from(c)
            );
            let reason_ok = core_api::text::plain("reason", &text).is_ok();
            assert_eq!(plain.is_match(&text), reason_ok, "reason {text:?}");
        }
    }
}
