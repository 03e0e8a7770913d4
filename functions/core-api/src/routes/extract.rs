//! Extractors whose rejections are [`ApiError`]s, so a malformed body, a missing content type
//! or an undecodable path or query answers 400 `invalid_argument` in the JSON error shape
//! instead of axum's plain-text rejections.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
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
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(&rejection)),
        }
    }
}

fn json_rejection(rejection: &JsonRejection) -> ApiError {
    let message = match rejection {
        JsonRejection::MissingJsonContentType(_) => {
            "request body must be JSON with Content-Type: application/json".to_owned()
        }
        JsonRejection::JsonSyntaxError(_) => "request body is not valid JSON".to_owned(),
        JsonRejection::JsonDataError(e) => {
            format!("request body has the wrong shape: {}", e.body_text())
        }
        JsonRejection::BytesRejection(_) => format!(
            "request body is unreadable or larger than {} bytes",
            super::MAX_BODY_BYTES
        ),
        _ => "request body is invalid".to_owned(),
    };
    ApiError::invalid(message)
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
                ApiError::invalid(format!("invalid query string: {detail}"))
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
