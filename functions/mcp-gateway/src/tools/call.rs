//! One `tools/call` in progress ([`Call`]): who is calling, by when it must answer, and what
//! it may use ([`Deps`]); plus the one mapping from a dependency's errors to tool errors
//! (SPEC §3, §6, §7).

use std::future::Future;
use std::time::Duration;

use kosha_contract::dependency::Dependency;
use kosha_contract::error::ErrorCode;
use kosha_resilience::chaos::{Faults, Target};
use kosha_resilience::deadline::Deadline;
use kosha_resilience::policy::{Policy, PolicyError};
use kosha_resilience::retry::Idempotency;
use rand::SeedableRng;
use rand::rngs::SmallRng;

use kosha_contract::screening::{ScreenRequest, ScreenResponse};

use kosha_runtime::trace::RequestTrace;

use crate::backends::Backend;
use crate::chaos::Honoured;
use crate::tools::deps::{BoxFuture, Deps};
use crate::tools::error::ToolError;
use crate::tools::observe::Sent;
use kosha_clients::core_api::{CallMeta, CoreApiError};
use kosha_clients::hop::hop_deadline;
use kosha_clients::screening::{ScreenMeta, ScreeningError};

/// One `tools/call` in progress: who is calling and by when it must answer.
#[derive(Debug)]
pub struct Call<'a> {
    /// The dependency clients, screening records and policies the tool may use.
    pub deps: Deps<'a>,
    /// The backends the served tools call (`get_service_health` reports them).
    pub backends: &'a [Backend],
    /// The caller's `client_id`, forwarded as `X-Kosha-Principal`.
    pub principal: Option<&'a str>,
    /// The calling person's `sub` ([`kosha_auth::Principal::user`]), forwarded as
    /// `X-Kosha-User` and part of every idempotency key and screening's scope (SPEC §5).
    pub user: Option<&'a str>,
    /// The token's `username`, for audit events only (SPEC §5: often an email address, it is
    /// never in a log line or a span).
    pub username: Option<&'a str>,
    /// The absolute deadline of this call.
    pub deadline: Deadline,
    /// The request's honoured chaos header, if any (SPEC §9).
    pub chaos: Option<&'a Honoured>,
    /// Requests this call has sent to its dependencies (the `attempts` and `hedges` of its
    /// log line, [`super::observe`]); every dependency helper here counts its sends.
    pub sent: &'a Sent,
    /// The request's trace, whose clock counts the time spent waiting on dependencies (the
    /// `overhead_us` of the log line); `None` outside an HTTP request.
    pub trace: Option<&'a RequestTrace>,
}

impl<'a> Call<'a> {
    /// Time left before the deadline (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.remaining()
    }

    /// The policy of `backend` (seed 004 §1).
    pub fn policy(&self, backend: Backend) -> &'a Policy {
        self.deps.policies.get(backend)
    }

    /// Awaits `future`, a call to a dependency, counting its time as waiting ([`waiting`]).
    /// Every dependency call of a tool goes through this.
    pub async fn waiting<F: Future>(&self, future: F) -> F::Output {
        waiting(self.trace, future).await
    }

    /// Runs one core-api read under the gateway's policy and maps its errors to tool errors.
    ///
    /// # Errors
    /// [`ToolError`] per SPEC §3: core-api's 4xx as the matching tool error, 5xx or an
    /// unreachable core-api as `dependency_unavailable`, a passed deadline as
    /// `deadline_exceeded`.
    pub async fn core_api_read<'f, T, F>(&self, op: F) -> Result<T, ToolError>
    where
        F: FnMut(CallMeta) -> BoxFuture<'f, Result<T, CoreApiError>>,
    {
        self.core_api(Backend::CoreApiRead, Idempotency::Idempotent, op)
            .await
            .map_err(|e| map_policy_error(e, Dependency::CoreApi))
    }

    /// Runs one core-api write under the write policy (seed 004 §1: one attempt, 4 s cap,
    /// bulkhead 16, its own breaker). The gateway never repeats a write, whatever
    /// `KOSHA_POLICY_CORE_API_WRITE_MAX_ATTEMPTS` says: the agent retries, with the same
    /// idempotency key.
    ///
    /// # Errors
    /// As [`Call::core_api_read`], except that a deadline or timeout that may have come after
    /// core-api received the request is [`ToolError::WriteUnconfirmed`] (`deadline_exceeded`,
    /// saying a retry with the same arguments is safe).
    pub async fn core_api_write<'f, T, F>(&self, op: F) -> Result<T, ToolError>
    where
        F: FnMut(CallMeta) -> BoxFuture<'f, Result<T, CoreApiError>>,
    {
        self.core_api(Backend::CoreApiWrite, Idempotency::NonIdempotent, op)
            .await
            .map_err(map_write_error)
    }

    /// `op` under `backend`'s policy, with this call's principal, deadline and chaos plan.
    ///
    /// Each attempt's future is boxed ([`Deps`]'s calls return boxes). The policy keeps an attempt's future inline in its
    /// own state, for the chaos step, the hedge race and the timeout, and with the HTTP
    /// client's future in it a tool call's future grew to tens of KiB. Every await moved
    /// it, which cost about 80,000 instructions per `get_transaction` in `memcpy`, and a
    /// box costs one allocation per attempt (issue 29, callgrind).
    async fn core_api<'f, T, F>(
        &self,
        backend: Backend,
        idempotency: Idempotency,
        mut op: F,
    ) -> Result<T, PolicyError<CoreApiError>>
    where
        F: FnMut(CallMeta) -> BoxFuture<'f, Result<T, CoreApiError>>,
    {
        let mut faults = self.faults(Target::CoreApi);
        let calls = self.policy(backend).call_with_faults(
            &self.deadline,
            idempotency,
            faults.as_mut(),
            |attempt| {
                self.sent.count(&attempt);
                op(CallMeta {
                    principal: self.principal.map(str::to_owned),
                    user: self.user.map(str::to_owned),
                    deadline_header: Some(
                        hop_deadline(&self.deadline, attempt.timeout).to_header(),
                    ),
                    timeout: attempt.timeout,
                    chaos: self.chaos.map(|h| h.header.clone()),
                })
            },
        );
        self.waiting(calls).await
    }
}

/// Awaits `future`, a call to a dependency, counting its time as waiting on `trace`'s clock
/// ([`RequestTrace::waiting`]); just awaits it without a trace.
pub async fn waiting<F: Future>(trace: Option<&RequestTrace>, future: F) -> F::Output {
    match trace {
        Some(trace) => trace.waiting(future).await,
        None => future.await,
    }
}

/// [`map_policy_error`] for a write: every way the deadline or the attempt cap can cut it
/// short is [`ToolError::WriteUnconfirmed`].
fn map_write_error(e: PolicyError<CoreApiError>) -> ToolError {
    const DEP: Dependency = Dependency::CoreApi;
    match e {
        PolicyError::AttemptTimeout | PolicyError::Inner(CoreApiError::Timeout) => {
            ToolError::WriteUnconfirmed { dependency: DEP }
        }
        // A broken connection may have delivered the request: the reply, not the write, may
        // be what was lost (a refused connection is answered the same way; a retry is safe).
        PolicyError::Inner(CoreApiError::Connect) => {
            ToolError::WriteUnavailable { dependency: DEP }
        }
        other => match map_policy_error(other, DEP) {
            ToolError::DeadlineExceeded { .. } => ToolError::WriteUnconfirmed { dependency: DEP },
            mapped => mapped,
        },
    }
}

impl Call<'_> {
    /// Runs one `POST /v1/screen` under screening-sim's policy, ending by `deadline` (the
    /// tool's, less what it keeps for recording a deferral). The policy's error is returned as
    /// is: `screen_entity` decides which failures defer (SPEC §10).
    ///
    /// # Errors
    /// [`PolicyError`] with the last [`ScreeningError`].
    pub async fn screening_sim(
        &self,
        deadline: &Deadline,
        request: &ScreenRequest,
    ) -> Result<ScreenResponse, PolicyError<ScreeningError>> {
        let mut faults = self.faults(Target::ScreeningSim);
        let calls = self.policy(Backend::ScreeningSim).call_with_faults(
            deadline,
            Idempotency::Idempotent,
            faults.as_mut(),
            |attempt| {
                self.sent.count(&attempt);
                let meta = ScreenMeta {
                    principal: self.principal.map(str::to_owned),
                    deadline_header: Some(hop_deadline(deadline, attempt.timeout).to_header()),
                    timeout: attempt.timeout,
                };
                // Boxed, as a core-api attempt is.
                self.deps.screening.screen(meta, request)
            },
        );
        self.waiting(calls).await
    }

    /// The fault plan of the honoured chaos header for calls to `target`, if it targets it:
    /// one draw per attempt, from a fresh RNG (SPEC §9). Any backend's call passes it to its
    /// policy, e.g. `policy.call_with_faults(&call.deadline, idempotency,
    /// call.faults(Target::ScreeningSim).as_mut(), op)`, so the fault lands inside that
    /// dependency's breaker, retries and attempt timeout (`None`: exactly `Policy::call`).
    pub fn faults(&self, target: Target) -> Option<Faults<SmallRng>> {
        self.chaos?
            .spec
            .faults_for(target, SmallRng::from_rng(&mut rand::rng()))
    }
}

/// Seconds for `retry_after_s`, rounded up so a client never retries early.
pub fn ceil_secs(d: Duration) -> u64 {
    d.as_millis().div_ceil(1000).try_into().unwrap_or(u64::MAX)
}

/// How long a client should wait on a forced-open breaker with no expiry: the override is
/// re-read every 5 s ([`kosha_state::OVERRIDE_REFRESH`], SPEC §8), so sooner cannot succeed.
const FORCED_OPEN_RETRY: Duration = kosha_state::OVERRIDE_REFRESH;

/// The one mapping from the policy's rejections and failures to tool errors (SPEC §3, §6).
fn map_policy_error(e: PolicyError<CoreApiError>, dependency: Dependency) -> ToolError {
    match e {
        PolicyError::DeadlineExceeded => ToolError::DeadlineExceeded {
            dependency: Some(dependency),
        },
        PolicyError::BulkheadFull => ToolError::Overloaded {
            dependency: Some(dependency),
            retry_after_s: Some(1),
        },
        PolicyError::CircuitOpen { retry_after } => {
            metrics::counter!("shed", "reason" => "breaker_open").increment(1);
            ToolError::DependencyUnavailable {
                dependency,
                retry_after_s: Some(ceil_secs(retry_after).max(1)),
            }
        }
        PolicyError::ForcedOpen { retry_after, .. } => {
            metrics::counter!("shed", "reason" => "forced_open").increment(1);
            ToolError::DependencyUnavailable {
                dependency,
                retry_after_s: Some(ceil_secs(retry_after.unwrap_or(FORCED_OPEN_RETRY)).max(1)),
            }
        }
        PolicyError::NotBefore { retry_after } => {
            metrics::counter!("shed", "reason" => "retry_after").increment(1);
            ToolError::DependencyUnavailable {
                dependency,
                retry_after_s: Some(ceil_secs(retry_after).max(1)),
            }
        }
        PolicyError::AttemptTimeout => ToolError::DependencyUnavailable {
            dependency,
            retry_after_s: None,
        },
        PolicyError::Inner(e) => map_core_api_error(e),
    }
}

/// The one mapping from core-api failures to tool errors (SPEC §3, §7).
fn map_core_api_error(e: CoreApiError) -> ToolError {
    const DEP: Dependency = Dependency::CoreApi;
    let secs = |d: Option<Duration>| d.map(ceil_secs);
    match e {
        CoreApiError::Status {
            status,
            code,
            message,
            retry_after,
            dependency,
        } => match (status.as_u16(), code) {
            (400 | 422, _) => ToolError::invalid("", message),
            (404, _) => ToolError::NotFound(message),
            (409, _) => ToolError::Conflict(message),
            (_, ErrorCode::DeadlineExceeded) | (504, _) => ToolError::DeadlineExceeded {
                dependency: Some(DEP),
            },
            (429, _) | (503, ErrorCode::Overloaded) => ToolError::Overloaded {
                dependency: Some(DEP),
                retry_after_s: secs(retry_after).or(Some(1)),
            },
            (500..=599, _) => ToolError::DependencyUnavailable {
                // core-api names its own failing dependency (postgres, openai); anything
                // else is core-api's fault.
                dependency: dependency
                    .filter(|d| matches!(d, Dependency::Postgres | Dependency::OpenAi))
                    .unwrap_or(DEP),
                retry_after_s: secs(retry_after),
            },
            _ => {
                tracing::error!(
                    status = status.as_u16(),
                    code = code.as_str(),
                    "unexpected core-api status"
                );
                ToolError::Internal
            }
        },
        CoreApiError::Build => ToolError::Internal,
        CoreApiError::Connect
        | CoreApiError::Timeout
        | CoreApiError::Decode
        | CoreApiError::Signing(_) => ToolError::DependencyUnavailable {
            dependency: DEP,
            retry_after_s: None,
        },
    }
}
