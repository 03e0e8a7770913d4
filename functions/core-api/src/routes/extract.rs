//! Extractors whose rejections are [`ApiError`]s, so a malformed body, a missing content type
//! or an undecodable path or query answers 400 `invalid_argument` in the JSON error shape
//! instead of axum's plain-text rejections. A JSON body is read by the contract crate's one
//! bounded parse ([`kosha_contract::json`]), as the gateway reads its messages: duplicate keys
//! anywhere (RFC 8259 §4) and bodies over its bounds are refused. Caller text quoted in a
//! rejection is clipped ([`kosha_contract::echo`]).

use axum::body::Bytes;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::header;
use axum::http::request::Parts;
use kosha_contract::echo::{clip, clip_serde_message};
use kosha_contract::json::{self, Fault, Limits};
use serde::de::DeserializeOwned;

use super::AppState;
use crate::chaos::Chaos;
use crate::deadline::{Budget, Deadline};
use crate::error::ApiError;

/// A JSON body (`Content-Type: application/json`) parsed as `T`.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::invalid(
                "request body must be JSON with Content-Type: application/json",
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|_| {
            ApiError::invalid(format!(
                "request body is unreadable or larger than {} bytes",
                super::MAX_BODY_BYTES
            ))
        })?;
        parse_body(&bytes).map(Self)
    }
}

/// `Content-Type` is `application/json` or `application/*+json` (parameters ignored).
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|sub| sub.ends_with("+json"))
}

/// `bytes` as `T`: one bounded parse, no duplicate key anywhere, then `T`'s shape.
///
/// # Errors
/// [`ApiError::InvalidArgument`] saying which: not JSON, over a bound, a duplicate key (named,
/// clipped), or the wrong shape (serde's message, the caller's text in it clipped).
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let parsed = json::parse(bytes, Limits::REQUEST, json::watch_all).map_err(|fault| {
        ApiError::invalid(match fault {
            Fault::Syntax(_) => "request body is not valid JSON".to_owned(),
            Fault::Limit(limit) => format!("request body too large: {limit}"),
            Fault::Unrepresentable => "request body holds a number out of range".to_owned(),
        })
    })?;
    if let Some(dup) = parsed.duplicate {
        return Err(ApiError::invalid(format!(
            "request body has a duplicate key: {}",
            clip(&dup.key)
        )));
    }
    serde_json::from_value(parsed.value).map_err(|e| {
        ApiError::invalid(format!(
            "request body has the wrong shape: {}",
            clip_serde_message(&e.to_string())
        ))
    })
}

/// A path parameter parsed as `T`.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| Self(value))
            .map_err(|rejection: PathRejection| {
                tracing::debug!(rejection = %rejection.body_text(), "bad path");
                ApiError::invalid("path parameter is not valid UTF-8 or has the wrong form")
            })
    }
}

/// The query string parsed as `T` (use `#[serde(deny_unknown_fields)]` on `T`).
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| Self(value))
            .map_err(|rejection: QueryRejection| {
                let detail = match &rejection {
                    QueryRejection::FailedToDeserializeQueryString(e) => e.body_text(),
                    other => other.body_text(),
                };
                // serde names the unknown or misshapen key and value: the caller's text.
                ApiError::invalid(format!(
                    "invalid query string: {}",
                    clip_serde_message(&detail)
                ))
            })
    }
}

/// The statement budget of this request: its [`Deadline`] (put there by
/// [`crate::deadline::enforce`]), the state's PostgreSQL settings and the verified chaos
/// header ([`crate::chaos::honour`]).
impl FromRequestParts<AppState> for Budget {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self {
            deadline: parts.extensions.get::<Deadline>().copied(),
            postgres: state.postgres,
            chaos: parts.extensions.get::<Chaos>().copied().unwrap_or_default(),
        })
    }
}
