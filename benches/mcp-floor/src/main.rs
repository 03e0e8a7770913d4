//! The two floors of the gateway's cost per call (issue 29; run by `scripts/bench-load
//! --callgrind` in the same run as the gateway, under the same measurement): the least a
//! server must do to answer the gateway's requests, with no auth, no limits, no log line and
//! no MCP library.
//!
//! - **Forwarding floor**: `POST /mcp` with a `tools/call` of `get_transaction` is parsed
//!   by serde_json, forwarded as `GET /v1/transactions/{transaction_id}` to core-api (one
//!   reqwest client, reused; `X-Kosha-Principal: mcp-floor`), and core-api's JSON is answered
//!   as a JSON-RPC result (`content` text + `structuredContent`, `isError: false`). A
//!   core-api status other than 200 is answered as a tool error (`isError: true`).
//! - **Fixed-answer floor**: any other `POST /mcp` body is parsed the same way and answered
//!   with a fixed result (`{"content":[...],"isError":false}`) under the request's `id`, with
//!   no outbound call.
//!
//! A body that is not a JSON-RPC request gets 400; `GET /healthz` answers `ok` (readiness).
//! One process serves both floors, so one valgrind start counts both.
//!
//! ```sh
//! cargo run --profile profiling -p mcp-floor -- --listen 127.0.0.1:8091 \
//!   --core-api-url http://127.0.0.1:8090
//! ```

use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Parser;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Parser)]
struct Args {
    /// Where to listen (`host:port`).
    #[arg(long)]
    listen: SocketAddr,
    /// core-api's base URL, for the forwarding floor.
    #[arg(long)]
    core_api_url: String,
}

/// What one request needs of the JSON-RPC body.
#[derive(Deserialize)]
struct Request {
    id: Value,
    method: String,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    name: String,
    #[serde(default)]
    arguments: Option<Arguments>,
}

#[derive(Deserialize)]
struct Arguments {
    transaction_id: Option<String>,
}

struct Floor {
    client: reqwest::Client,
    core_api_url: String,
}

async fn mcp(State(floor): State<std::sync::Arc<Floor>>, body: axum::body::Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Request>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let transaction = match (&request.method[..], request.params) {
        (
            "tools/call",
            Some(Params {
                name,
                arguments:
                    Some(Arguments {
                        transaction_id: Some(id),
                    }),
            }),
        ) if name == "get_transaction" => id,
        _ => {
            let result = json!({"content": [{"type": "text", "text": "{\"status\":\"ok\"}"}], "isError": false});
            return answer(request.id, result);
        }
    };
    let url = format!("{}/v1/transactions/{transaction}", floor.core_api_url);
    let sent = floor
        .client
        .get(url)
        .header("x-kosha-principal", "mcp-floor")
        .send()
        .await;
    let result = match sent {
        Ok(response) if response.status() == StatusCode::OK => match response.json::<Value>().await
        {
            Ok(found) => json!({
                "content": [{"type": "text", "text": found.to_string()}],
                "structuredContent": found,
                "isError": false,
            }),
            Err(e) => tool_error(&e),
        },
        Ok(response) => tool_error(&response.status()),
        Err(e) => tool_error(&e),
    };
    answer(request.id, result)
}

fn tool_error(e: &dyn std::fmt::Display) -> Value {
    json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true})
}

fn answer(id: Value, result: Value) -> Response {
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let floor = Floor {
        client: reqwest::Client::new(),
        core_api_url: args.core_api_url.trim_end_matches('/').to_owned(),
    };
    let app = Router::new()
        .route("/mcp", post(mcp))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(std::sync::Arc::new(floor));
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    axum::serve(listener, app).await
}
