//! Tool errors (SPEC §3): a failed tool answers `isError: true` with
//! `structuredContent: {"error": {"code", "message", "retry_after_s"?, "dependency"?}}`.
//! Never a stack trace, never a secret: messages are written for the calling model.

use kosha_contract::dependency::Dependency;
use kosha_contract::error::{ErrorBody, ErrorCode};
use kosha_resilience::rate_limit::BucketKind;
use rmcp::model::CallToolResult;
use serde_json::Value;

/// Why a tool call failed, as the agent sees it. Each variant has one stable `code`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// An argument is missing, of the wrong type, out of range or malformed (SEP-1303).
    #[error("{}", if field.is_empty() { message.clone() } else { format!("{field}: {message}") })]
    InvalidArgument {
        /// The argument's name (a JSON path such as `top_k`), empty when not one field.
        field: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// The named entity does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with earlier state (an idempotency key reused with another body).
    #[error("{0}")]
    Conflict(String),
    /// The request's deadline passed, or too little of it was left to start the tool.
    #[error("the request deadline passed before the tool could complete")]
    DeadlineExceeded {
        /// The dependency that was being waited on, if any.
        dependency: Option<Dependency>,
    },
    /// A write's deadline passed (or its attempt timed out) after the request may have
    /// reached core-api: it may or may not have been recorded. Code `deadline_exceeded`; the
    /// idempotency key makes a retry with the same arguments safe (SPEC §4).
    #[error(
        "the request deadline passed before {dependency} confirmed the write, which may or may \
         not have been recorded; retrying with the same arguments (and the same \
         idempotency_key, if you gave one) is safe: it returns the first result"
    )]
    WriteUnconfirmed {
        /// The dependency that was being waited on.
        dependency: Dependency,
    },
    /// A dependency is down, failing, or its circuit breaker is open.
    #[error("{dependency} is unavailable; retry later")]
    DependencyUnavailable {
        /// `core-api`, `screening-sim`, `openai` or `postgres` (SPEC §8).
        dependency: Dependency,
        /// When a retry may succeed, in whole seconds (rounded up).
        retry_after_s: Option<u64>,
    },
    /// A write's connection to a dependency broke, before or after the request reached it
    /// (a reply lost past the commit included, issue 43): it may or may not have been
    /// recorded. Code `dependency_unavailable`; the idempotency key makes a retry with the
    /// same arguments safe (SPEC §4).
    #[error(
        "{dependency} is unavailable and the write may or may not have been recorded; \
         retrying with the same arguments (and the same idempotency_key, if you gave one) is \
         safe: it returns the first result"
    )]
    WriteUnavailable {
        /// The dependency whose connection broke.
        dependency: Dependency,
    },
    /// The state table holding screening records cannot be read or written now (it is not
    /// one of SPEC §8's dependencies, so no `dependency` is named).
    #[error("the screening records are unavailable; retry later")]
    StoreUnavailable {
        /// When a retry may succeed, in whole seconds.
        retry_after_s: Option<u64>,
    },
    /// The gateway or a dependency is at capacity (bulkhead full, pool exhausted).
    #[error("the service is at capacity; retry shortly")]
    Overloaded {
        /// The saturated dependency, if the limit was a dependency's.
        dependency: Option<Dependency>,
        /// When a retry may succeed, in whole seconds.
        retry_after_s: Option<u64>,
    },
    /// The caller's token bucket holds less than this tool's cost (SPEC §6). Code
    /// `rate_limited`; answered as a tool error (HTTP 200) so the model reads it. The message
    /// names whose limit is spent: the app client's (shared by everyone behind it) or, with
    /// `KOSHA_RATE_KEY=user`, the person's own (issue 44).
    #[error(
        "{} rate limit is spent; retry after {retry_after_s} s (the limit refills \
         over time; other methods such as tools/list are not limited)",
        limit_owner(*bucket)
    )]
    RateLimited {
        /// Whole seconds until the bucket holds the tool's cost (rounded up, ≥ 1).
        retry_after_s: u64,
        /// Whose bucket was spent: the client's or the user's (SPEC §6 `KOSHA_RATE_KEY`).
        bucket: BucketKind,
    },
    /// A policy refused the call (SPEC §5a); the message is the deciding policy's `@reason`,
    /// written by the operator for the model, or "not permitted".
    #[error("{0}")]
    Forbidden(String),
    /// The call needs its person's confirmation and this client cannot ask them (SPEC §5b): a
    /// revision before 2026-07-28, no elicitation capability, or a machine token (which has no
    /// person). Code `confirmation_required`.
    #[error(
        "a person must approve this call before it runs, and this client cannot show them the \
         question; ask the user to make the request from an MCP client that supports \
         elicitation (protocol 2026-07-28), signed in as themselves"
    )]
    ConfirmationRequired,
    /// The person asked to confirm the call said no, or dismissed the question (SPEC §5b).
    /// Code `declined`; nothing was written.
    #[error(
        "the user declined this call when asked to confirm it; nothing was done. Do not \
         retry it unless the user asks again"
    )]
    Declined,
    /// The key that seals a confirmation's state cannot be read now (Secrets Manager down or
    /// the secret malformed), so the person cannot be asked and the call does not run. Code
    /// `dependency_unavailable`, with no dependency named (it is not one of SPEC §8's).
    #[error("confirmations are unavailable right now; retry later")]
    ConfirmUnavailable {
        /// When a retry may succeed, in whole seconds.
        retry_after_s: Option<u64>,
    },
    /// A bug on our side. Details are logged, never returned.
    #[error("internal error")]
    Internal,
}

/// Whose limit a `rate_limited` message names (SPEC §6): the app client's bucket is shared by
/// every caller behind the client, a user's is that person's own.
fn limit_owner(bucket: BucketKind) -> &'static str {
    match bucket {
        BucketKind::Client => "this client's",
        BucketKind::User => "this user's own",
    }
}

impl ToolError {
    /// An [`ToolError::InvalidArgument`] for `field`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArgument {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The stable code of SPEC §3.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::Conflict(_) => ErrorCode::Conflict,
            Self::DeadlineExceeded { .. } | Self::WriteUnconfirmed { .. } => {
                ErrorCode::DeadlineExceeded
            }
            Self::DependencyUnavailable { .. }
            | Self::WriteUnavailable { .. }
            | Self::StoreUnavailable { .. }
            | Self::ConfirmUnavailable { .. } => ErrorCode::DependencyUnavailable,
            Self::Overloaded { .. } => ErrorCode::Overloaded,
            Self::RateLimited { .. } => ErrorCode::RateLimited,
            Self::Forbidden(_) => ErrorCode::Forbidden,
            Self::ConfirmationRequired => ErrorCode::ConfirmationRequired,
            Self::Declined => ErrorCode::Declined,
            Self::Internal => ErrorCode::Internal,
        }
    }

    /// The `{"error": {...}}` body of SPEC §3 (the same shape as core-api's, SPEC §7).
    pub fn body(&self) -> ErrorBody {
        let mut body = ErrorBody::new(self.code(), self.to_string());
        let (retry_after_s, dependency) = match self {
            Self::DependencyUnavailable {
                dependency,
                retry_after_s,
            } => (*retry_after_s, Some(*dependency)),
            Self::Overloaded {
                dependency,
                retry_after_s,
            } => (*retry_after_s, *dependency),
            Self::DeadlineExceeded { dependency } => (None, *dependency),
            Self::WriteUnconfirmed { dependency } | Self::WriteUnavailable { dependency } => {
                (None, Some(*dependency))
            }
            Self::StoreUnavailable { retry_after_s }
            | Self::ConfirmUnavailable { retry_after_s } => (*retry_after_s, None),
            Self::RateLimited { retry_after_s, .. } => (Some(*retry_after_s), None),
            Self::InvalidArgument { .. }
            | Self::NotFound(_)
            | Self::Conflict(_)
            | Self::Forbidden(_)
            | Self::ConfirmationRequired
            | Self::Declined
            | Self::Internal => (None, None),
        };
        body.error.retry_after_s = retry_after_s;
        body.error.dependency = dependency.map(|d| d.as_str().to_owned());
        body
    }

    /// [`ToolError::body`] as JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.body()).unwrap_or(Value::Null)
    }

    /// The MCP result: `isError: true`, the error object as `structuredContent` and as text.
    pub fn into_result(self) -> CallToolResult {
        CallToolResult::structured_error(self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_unavailable_carries_retry_after_and_dependency() {
        let v = ToolError::DependencyUnavailable {
            dependency: Dependency::CoreApi,
            retry_after_s: Some(15),
        }
        .to_json();
        assert_eq!(v["error"]["code"], "dependency_unavailable");
        assert_eq!(v["error"]["retry_after_s"], 15);
        assert_eq!(v["error"]["dependency"], "core-api");
    }

    #[test]
    fn invalid_argument_names_the_field_and_omits_optional_keys() {
        let v = ToolError::invalid("top_k", "must be between 1 and 20").to_json();
        assert_eq!(v["error"]["code"], "invalid_argument");
        assert_eq!(v["error"]["message"], "top_k: must be between 1 and 20");
        assert!(v["error"].get("retry_after_s").is_none());
        assert!(v["error"].get("dependency").is_none());
    }

    #[test]
    fn an_unconfirmed_write_is_deadline_exceeded_and_says_a_retry_is_safe() {
        let v = ToolError::WriteUnconfirmed {
            dependency: Dependency::CoreApi,
        }
        .to_json();
        assert_eq!(v["error"]["code"], "deadline_exceeded");
        assert_eq!(v["error"]["dependency"], "core-api");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("retrying with the same arguments"),
            "{message}"
        );
        assert!(message.contains("safe"), "{message}");
    }

    #[test]
    fn rate_limited_carries_retry_after_and_no_dependency() {
        let v = ToolError::RateLimited {
            retry_after_s: 7,
            bucket: BucketKind::Client,
        }
        .to_json();
        assert_eq!(v["error"]["code"], "rate_limited");
        assert_eq!(v["error"]["retry_after_s"], 7);
        assert!(v["error"].get("dependency").is_none());
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("retry after 7 s"), "{message}");
        assert!(message.starts_with("this client's rate limit"), "{message}");
    }

    #[test]
    fn rate_limited_on_a_user_bucket_names_the_users_limit_not_the_clients() {
        let v = ToolError::RateLimited {
            retry_after_s: 3,
            bucket: BucketKind::User,
        }
        .to_json();
        assert_eq!(v["error"]["code"], "rate_limited");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("this user's own rate limit"),
            "{message}"
        );
        assert!(!message.contains("client"), "{message}");
        assert!(message.contains("retry after 3 s"), "{message}");
    }

    #[test]
    fn the_confirmation_errors_tell_the_model_what_happened_and_what_to_do() {
        let v = ToolError::ConfirmationRequired.to_json();
        assert_eq!(v["error"]["code"], "confirmation_required");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("a person must approve"), "{message}");
        assert!(message.contains("elicitation"), "{message}");
        let v = ToolError::Declined.to_json();
        assert_eq!(v["error"]["code"], "declined");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("declined"), "{message}");
        assert!(message.contains("nothing was done"), "{message}");
        let v = ToolError::ConfirmUnavailable {
            retry_after_s: Some(30),
        }
        .to_json();
        assert_eq!(v["error"]["code"], "dependency_unavailable");
        assert_eq!(v["error"]["retry_after_s"], 30);
        assert!(v["error"].get("dependency").is_none());
    }

    #[test]
    fn result_is_flagged_as_error_with_text_mirror() {
        let r = ToolError::NotFound("transaction txn_999999 not found".into()).into_result();
        assert_eq!(r.is_error, Some(true));
        assert_eq!(r.content.len(), 1);
        assert_eq!(r.structured_content.unwrap()["error"]["code"], "not_found");
    }
}
