//! Hello-world `lambda_http` function, built with the workspace's release profile, used by
//! `scripts/bench-lambda` as the baseline for the gateway's zip size and init time
//! (issue 6: gateway init ≤ 1.5× this binary's, median of 20 runs).

use lambda_http::{Body, Error, Request, Response, service_fn};

async fn hello(_request: Request) -> Result<Response<Body>, Error> {
    let response = Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Body::from(r#"{"status":"ok"}"#))?;
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(hello)).await
}
