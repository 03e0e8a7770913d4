//! The local issuer's metadata documents (issue 44, SPEC §5): OpenID Connect Discovery 1.0 §4
//! at `<issuer>/.well-known/openid-configuration`, as a Cognito pool serves it, and RFC 8414
//! §3 at `/.well-known/oauth-authorization-server<issuer path>`, which MCP clients try first.
//!
//! Both name only endpoints the issuer serves (`authorization_endpoint`, `token_endpoint`,
//! `jwks_uri`; no `userinfo`, `revocation` or `end_session` endpoint), the two grants and PKCE
//! with S256 (`grant_types_supported`, `code_challenge_methods_supported`), and the scopes the
//! app clients may have.

use super::authorize::PUBLIC_SCOPES;
use super::{AUTHORIZE_PATH, Issuer, TOKEN_PATH};

/// The RFC 8414 authorization server metadata.
pub fn authorization_server(issuer: &Issuer) -> serde_json::Value {
    let o = &issuer.origin;
    serde_json::json!({
        "issuer": issuer.issuer,
        "authorization_endpoint": format!("{o}{AUTHORIZE_PATH}"),
        "token_endpoint": format!("{o}{TOKEN_PATH}"),
        "jwks_uri": format!("{}/.well-known/jwks.json", issuer.issuer),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported":
            ["client_secret_basic", "client_secret_post", "none"],
        "scopes_supported": PUBLIC_SCOPES,
    })
}

/// The OpenID provider metadata: the RFC 8414 fields and OpenID's own.
pub fn openid_configuration(issuer: &Issuer) -> serde_json::Value {
    let mut doc = authorization_server(issuer);
    doc["id_token_signing_alg_values_supported"] = serde_json::json!(["RS256"]);
    doc["subject_types_supported"] = serde_json::json!(["public"]);
    doc
}
