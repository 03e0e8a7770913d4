//! The local issuer's app clients (issue #31): who may use the client-credentials grant, with
//! which secret and which scopes, as a Cognito user pool's confidential app clients.
//!
//! File shape (JSON, written by `scripts/lib/stack.sh` with mode 0600: it holds the secrets):
//! `{"clients": [{"client_id": "…", "client_secret": "…", "scopes": ["kosha/agent", …]}]}`.
//! Every client needs a non-empty id and secret, ids are unique, scopes hold no whitespace.

use std::collections::BTreeMap;
use std::path::Path;

use subtle::ConstantTimeEq;

/// One confidential app client.
#[derive(Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppClient {
    /// The app client id: the token's `client_id` and `sub`.
    pub client_id: String,
    /// The client secret. Secret: never logged, never in `Debug`.
    client_secret: String,
    /// The scopes the client may be granted (Cognito's `AllowedOAuthScopes`).
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for AppClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppClient")
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientsFile {
    clients: Vec<AppClient>,
}

/// The app clients, by id.
#[derive(Debug, Clone)]
pub struct Clients {
    by_id: BTreeMap<String, AppClient>,
}

impl Clients {
    /// Parses and checks a clients document (the module's shape). Errors name the problem,
    /// never a secret.
    pub fn parse(json: &str) -> Result<Self, String> {
        let file: ClientsFile =
            serde_json::from_str(json).map_err(|e| format!("not a clients document: {e}"))?;
        let mut by_id = BTreeMap::new();
        for client in file.clients {
            if client.client_id.trim().is_empty() || client.client_secret.is_empty() {
                return Err("every client needs a client_id and a client_secret".to_owned());
            }
            if let Some(scope) = client
                .scopes
                .iter()
                .find(|s| s.is_empty() || s.chars().any(char::is_whitespace))
            {
                return Err(format!(
                    "client {:?}: scope {scope:?} is empty or holds whitespace",
                    client.client_id
                ));
            }
            let id = client.client_id.clone();
            if by_id.insert(id.clone(), client).is_some() {
                return Err(format!("client {id:?} is listed twice"));
            }
        }
        if by_id.is_empty() {
            return Err("no clients".to_owned());
        }
        Ok(Self { by_id })
    }

    /// Reads and parses the clients file at `path`.
    pub fn read(path: &Path) -> Result<Self, String> {
        let json = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&json).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The client `id` when `secret` is its secret (compared in constant time), else `None`:
    /// an unknown id and a wrong secret are the same answer (`invalid_client`).
    pub fn authenticate(&self, id: &str, secret: &str) -> Option<&AppClient> {
        let client = self.by_id.get(id)?;
        bool::from(client.client_secret.as_bytes().ct_eq(secret.as_bytes())).then_some(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"clients": [
        {"client_id": "a", "client_secret": "s3cret", "scopes": ["kosha/agent"]},
        {"client_id": "b", "client_secret": "other", "scopes": []}
    ]}"#;

    #[test]
    fn authenticates_only_the_right_secret() {
        let clients = Clients::parse(DOC).unwrap();
        assert_eq!(
            clients
                .authenticate("a", "s3cret")
                .map(|c| c.scopes.clone()),
            Some(vec!["kosha/agent".to_owned()])
        );
        assert!(clients.authenticate("a", "s3cre").is_none());
        assert!(clients.authenticate("a", "other").is_none());
        assert!(clients.authenticate("c", "s3cret").is_none());
    }

    #[test]
    fn refuses_bad_documents_without_printing_secrets() {
        for (doc, want) in [
            ("{}", "not a clients document"),
            (r#"{"clients": []}"#, "no clients"),
            (
                r#"{"clients": [{"client_id": "", "client_secret": "x", "scopes": []}]}"#,
                "needs a client_id",
            ),
            (
                r#"{"clients": [{"client_id": "a", "client_secret": "hidden", "scopes": ["a b"]}]}"#,
                "holds whitespace",
            ),
            (
                r#"{"clients": [{"client_id": "a", "client_secret": "hidden", "scopes": []},
                                {"client_id": "a", "client_secret": "hidden", "scopes": []}]}"#,
                "listed twice",
            ),
        ] {
            let err = Clients::parse(doc).unwrap_err();
            assert!(err.contains(want), "{doc}: {err}");
            assert!(!err.contains("hidden"), "{err}");
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let clients = Clients::parse(DOC).unwrap();
        assert!(!format!("{clients:?}").contains("s3cret"));
    }
}
