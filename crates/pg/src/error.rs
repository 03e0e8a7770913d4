//! The one classification of a PostgreSQL failure ([`DbError`]): what the caller should do
//! about it (retry later, give up, or report a bug). core-api's HTTP edge maps it to an error
//! code; the outbox-relay logs it.

use deadpool_postgres::{PoolError, TimeoutType};
use tokio_postgres::error::SqlState;

/// A database failure, classified by what it means for the request.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// No pooled connection became free within the pool's wait timeout (seed 004 §1: 0.5 s).
    #[error("no pooled connection within the wait timeout")]
    PoolExhausted,
    /// PostgreSQL cannot be reached, refused us, or dropped the connection.
    #[error("postgres unavailable: {0}")]
    Unavailable(String),
    /// PostgreSQL cancelled the statement on `statement_timeout` (SQLSTATE 57014), or the
    /// request's deadline left no time to send it.
    #[error("statement timed out")]
    StatementTimeout,
    /// The request's deadline ran out while waiting for a pooled connection, opening one, or
    /// waiting for an answer PostgreSQL never sent ([`crate::pool::checkout`], seed 004 §2).
    #[error("request deadline reached waiting for postgres")]
    DeadlineExceeded,
    /// PostgreSQL refused a value (SQLSTATE class 22, "data exception": a NUL in text 22021,
    /// a malformed number 22P02, a too-long string 22001, out-of-range numbers 22003 or dates
    /// 22007/22008, division by zero 22012, ...). The request's input is at fault, not
    /// core-api: it answers 400 (core-api's `error` module).
    #[error("postgres refused a value: {detail} ({sqlstate})")]
    InvalidValue {
        /// The five-character SQLSTATE, e.g. `22021`.
        sqlstate: String,
        /// PostgreSQL's message, for the log only.
        detail: String,
    },
    /// The statement itself failed: a bug in core-api (bad SQL, type mismatch, constraint).
    #[error("query failed: {0}")]
    Query(String),
}

impl From<tokio_postgres::Error> for DbError {
    fn from(e: tokio_postgres::Error) -> Self {
        if let Some(db) = e.as_db_error() {
            let code = db.code();
            if *code == SqlState::QUERY_CANCELED {
                return Self::StatementTimeout;
            }
            return if is_unavailable_state(code) {
                Self::Unavailable(db.message().to_owned())
            } else if code.code().starts_with("22") {
                Self::InvalidValue {
                    sqlstate: code.code().to_owned(),
                    detail: db.message().to_owned(),
                }
            } else {
                Self::Query(format!("{} ({})", db.message(), code.code()))
            };
        }
        let is_io = std::error::Error::source(&e)
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
        let text = error_chain(&e);
        if is_io || e.is_closed() || text.starts_with("timeout waiting for server") {
            Self::Unavailable(text)
        } else {
            Self::Query(text)
        }
    }
}

impl From<kosha_resilience::chaos::InjectedFault> for DbError {
    /// A chaos fault as the failure it stands for (SPEC §9): both an `error` and a `reset` are
    /// PostgreSQL being unreachable, as a refused or dropped connection is classified.
    fn from(fault: kosha_resilience::chaos::InjectedFault) -> Self {
        Self::Unavailable(fault.to_string())
    }
}

impl From<PoolError> for DbError {
    fn from(e: PoolError) -> Self {
        match e {
            PoolError::Timeout(TimeoutType::Wait) => Self::PoolExhausted,
            PoolError::Timeout(TimeoutType::Create | TimeoutType::Recycle) => {
                Self::Unavailable("timed out connecting to postgres".to_owned())
            }
            PoolError::Backend(inner) => inner.into(),
            PoolError::Closed => Self::Unavailable("pool closed".to_owned()),
            PoolError::NoRuntimeSpecified => Self::Query("pool built without a runtime".to_owned()),
            PoolError::PostCreateHook(hook) => Self::Unavailable(hook.to_string()),
        }
    }
}

/// `e` and its sources, `: `-separated. tokio-postgres's own text is only the kind ("error
/// performing TLS handshake", "invalid connection string"); the why (rustls's "invalid peer
/// certificate: UnknownIssuer", an I/O error, the option refused) is its source. None of them
/// quotes a password.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// SQLSTATEs that mean "PostgreSQL is not usable right now" rather than "this query is wrong":
/// class 08 (connection), 53 (insufficient resources), 57P0x (shutdown, cannot connect now),
/// 28 (authentication) and 3D000 (database missing).
fn is_unavailable_state(code: &SqlState) -> bool {
    let c = code.code();
    c.starts_with("08")
        || c.starts_with("53")
        || c.starts_with("57P")
        || c.starts_with("28")
        || c == "3D000"
}
