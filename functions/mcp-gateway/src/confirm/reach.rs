//! Whether the person behind a call can be asked, statelessly, in its client (SPEC §5b).
//!
//! Three things must hold; the first that does not is the reason the call gets
//! `confirmation_required` instead of a question:
//! 1. **The revision is 2026-07-28 or later.** Before it, a question mid-call is a
//!    server-to-client request on a session, which a stateless gateway cannot hold open; rmcp
//!    also refuses to send an `InputRequiredResult` to an older peer (its
//!    `ServerHandler::handle_request`).
//! 2. **The request declares form elicitation.** At 2026-07-28 there is no handshake: every
//!    request carries the client's capabilities in
//!    `_meta["io.modelcontextprotocol/clientCapabilities"]` (SEP-2575), read here from the
//!    request, never from a session. `elicitation: {}` means form mode (MCP 2025-11-25: an
//!    empty elicitation capability is form only), as does `{"form": {}}`; `{"url": {}}`
//!    alone does not.
//! 3. **A person is calling.** A client-credentials token has no person behind it
//!    (`kosha_auth::Caller::Client`), and neither does a token that is not a user's.

use kosha_auth::{Caller, Principal};
use rmcp::RoleServer;
use rmcp::model::{ClientCapabilities, ProtocolVersion};
use rmcp::service::RequestContext;

/// Why a person cannot be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreachable {
    /// A revision before 2026-07-28 (or none known).
    OlderRevision,
    /// The request does not declare form elicitation.
    NoElicitation,
    /// A machine client's token: no person.
    NoPerson,
}

impl Unreachable {
    /// The reason's name in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OlderRevision => "older_revision",
            Self::NoElicitation => "no_elicitation",
            Self::NoPerson => "no_person",
        }
    }
}

/// What a request says about its client, as [`reach`] reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Client {
    /// The request's protocol revision.
    pub protocol: Option<ProtocolVersion>,
    /// The capabilities this request declares.
    pub capabilities: Option<ClientCapabilities>,
}

impl Client {
    /// What `ctx` says: its revision (`_meta` at 2026-07-28, else the `MCP-Protocol-Version`
    /// header rmcp put in the peer info) and the capabilities in its own `_meta`.
    pub fn of(ctx: &RequestContext<RoleServer>) -> Self {
        Self {
            protocol: ctx.protocol_version(),
            capabilities: ctx.meta.client_capabilities(),
        }
    }
}

/// `Ok` when `principal`, calling through `client`, can be asked (module docs).
///
/// # Errors
/// The first [`Unreachable`] reason.
pub fn reach(client: &Client, principal: &Principal) -> Result<(), Unreachable> {
    let modern = client
        .protocol
        .as_ref()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    if !modern {
        return Err(Unreachable::OlderRevision);
    }
    let form = client
        .capabilities
        .as_ref()
        .and_then(|c| c.elicitation.as_ref())
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    if !form {
        return Err(Unreachable::NoElicitation);
    }
    let caller = Caller::of(
        principal.username.as_deref(),
        &principal.client_id,
        &principal.subject,
    );
    if caller != Caller::User {
        return Err(Unreachable::NoPerson);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use kosha_auth::Role;
    use serde_json::json;

    use super::*;

    fn principal(username: Option<&str>, sub: &str) -> Principal {
        Principal {
            client_id: "app".into(),
            subject: sub.into(),
            username: username.map(Into::into),
            roles: vec![Role::Agent],
            scopes: vec![],
            groups: vec![],
            tags: Default::default(),
            expires_at: 0,
        }
    }

    fn client(version: &str, capabilities: serde_json::Value) -> Client {
        Client {
            protocol: Some(serde_json::from_value(json!(version)).unwrap()),
            capabilities: Some(serde_json::from_value(capabilities).unwrap()),
        }
    }

    fn alice() -> Principal {
        principal(Some("alice"), "uuid-alice")
    }

    #[test]
    fn a_person_with_a_2026_client_declaring_form_elicitation_can_be_asked() {
        for elicitation in [
            json!({}),
            json!({"form": {}}),
            json!({"form": {}, "url": {}}),
        ] {
            let c = client("2026-07-28", json!({ "elicitation": elicitation }));
            assert_eq!(reach(&c, &alice()), Ok(()), "{elicitation}");
        }
    }

    #[test]
    fn an_older_revision_cannot_be_asked_whatever_it_declares() {
        let c = client("2025-11-25", json!({"elicitation": {"form": {}}}));
        assert_eq!(reach(&c, &alice()), Err(Unreachable::OlderRevision));
        let none = Client::default();
        assert_eq!(reach(&none, &alice()), Err(Unreachable::OlderRevision));
    }

    #[test]
    fn a_request_without_form_elicitation_cannot_be_asked() {
        for caps in [
            json!({}),
            json!({"elicitation": {"url": {}}}),
            json!({"sampling": {}}),
        ] {
            let c = client("2026-07-28", caps.clone());
            assert_eq!(
                reach(&c, &alice()),
                Err(Unreachable::NoElicitation),
                "{caps}"
            );
        }
        let undeclared = Client {
            capabilities: None,
            ..client("2026-07-28", json!({}))
        };
        assert_eq!(
            reach(&undeclared, &alice()),
            Err(Unreachable::NoElicitation)
        );
    }

    #[test]
    fn a_machine_token_has_no_person_to_ask() {
        let c = client("2026-07-28", json!({"elicitation": {"form": {}}}));
        assert_eq!(
            reach(&c, &principal(None, "app")),
            Err(Unreachable::NoPerson)
        );
        assert_eq!(
            reach(&c, &principal(None, "uuid-x")),
            Err(Unreachable::NoPerson)
        );
    }
}
