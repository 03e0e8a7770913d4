//! One request out, the same way for both clients: who is calling (`X-Kosha-Principal`), by
//! when (`X-Request-Deadline`, [`crate::hop`]), the call's `traceparent`/`tracestate`
//! (SPEC §12), a SigV4 signature when configured, and the attempt's hard timeout.

use std::time::Duration;

use kosha_contract::headers;
use kosha_runtime::sigv4::SigV4Signer;
use reqwest::{Client, RequestBuilder, Response};

use crate::error::{self, ClientError};

/// Who is calling and by when; sent with every request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller<'a> {
    /// `X-Kosha-Principal`: the caller's `client_id`, never its token.
    pub principal: Option<&'a str>,
    /// `X-Request-Deadline`, already reduced by the hop margin.
    pub deadline_header: Option<&'a str>,
    /// Hard cap on this attempt.
    pub timeout: Duration,
}

/// Sends `req` over `http` with `caller`'s headers, signed by `signer` when given (after every
/// header is set, so the signature covers them), and returns whatever status came back.
///
/// # Errors
/// [`ClientError::Build`] (never sent), [`ClientError::Signing`], or the transport's
/// [`ClientError::Timeout`] / [`ClientError::Connect`].
pub(crate) async fn send(
    http: &Client,
    signer: Option<&SigV4Signer>,
    mut req: RequestBuilder,
    caller: &Caller<'_>,
) -> Result<Response, ClientError> {
    req = req.timeout(caller.timeout);
    if let Some(p) = caller.principal {
        req = req.header(headers::PRINCIPAL, p);
    }
    if let Some(d) = caller.deadline_header {
        req = req.header(headers::REQUEST_DEADLINE, d);
    }
    req = kosha_runtime::trace::propagate(req);
    let mut request = req.build().map_err(|e| {
        tracing::error!(error = %e, "request not built");
        ClientError::Build
    })?;
    if let Some(signer) = signer {
        signer.sign(&mut request, caller.timeout).await?;
    }
    http.execute(request)
        .await
        .map_err(|e| error::transport(&e))
}
