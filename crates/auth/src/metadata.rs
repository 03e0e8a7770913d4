//! The OAuth protected-resource metadata document served at
//! `GET /.well-known/oauth-protected-resource` (RFC 9728 §2–3, SPEC §3, MCP authorization).
//!
//! Fields: `resource` (the MCP endpoint URL clients use), `authorization_servers` (the Cognito
//! issuer), `bearer_methods_supported: ["header"]` (tokens only in `Authorization`, never in a
//! query or body) and `scopes_supported`.

use serde::Serialize;

/// RFC 9728 metadata. Serialise it as the JSON body (`application/json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProtectedResourceMetadata {
    /// The protected resource's identifier: the public MCP endpoint URL.
    pub resource: String,
    /// Issuers whose tokens are accepted (`KOSHA_JWT_ISSUER`).
    pub authorization_servers: Vec<String>,
    /// Always `["header"]` (RFC 6750 §2.1).
    pub bearer_methods_supported: Vec<String>,
    /// OAuth scopes clients should request: the role scopes `<prefix>/agent` and
    /// `<prefix>/operator` (SPEC §5); a client-credentials client asks for these and gets those
    /// its app client may have.
    pub scopes_supported: Vec<String>,
}

impl ProtectedResourceMetadata {
    /// Metadata for `resource` (e.g. `https://kosha.example.com/mcp`) protected by tokens from
    /// `issuer`, advertising `scopes`.
    pub fn new(resource: &str, issuer: &str, scopes: &[&str]) -> Self {
        Self {
            resource: resource.to_owned(),
            authorization_servers: vec![issuer.to_owned()],
            bearer_methods_supported: vec!["header".to_owned()],
            scopes_supported: scopes.iter().map(|s| (*s).to_owned()).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_the_rfc_9728_fields() {
        let doc = ProtectedResourceMetadata::new(
            "https://kosha.example.com/mcp",
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_X",
            &["kosha/mcp"],
        );
        let json = serde_json::to_value(&doc).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({
                "resource": "https://kosha.example.com/mcp",
                "authorization_servers": ["https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_X"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["kosha/mcp"],
            })
        );
    }
}
