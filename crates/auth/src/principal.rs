//! The authenticated caller: [`Principal`] and its [`Role`]s (SPEC §5).
//!
//! Roles come from one claim, chosen by the kind of token ([`Caller`]), never from both
//! (ARCHITECTURE pitfall 28: a user-pool app client lets every user request every scope it
//! allows, so a scope in a user's token says nothing about the user):
//! - a user's token (it has `username`, as every Cognito user access token does): its
//!   `cognito:groups` alone; the group `agent` is [`Role::Agent`], `operator` is
//!   [`Role::Operator`];
//! - a machine client's token of the client-credentials grant (no `username`, `sub` equal to
//!   `client_id`, no groups in Cognito's): its `scope` alone; the resource-server scopes
//!   `<prefix>/agent` and `<prefix>/operator`, where the prefix is `KOSHA_SCOPE_PREFIX`
//!   (default [`DEFAULT_SCOPE_PREFIX`], the resource server's identifier);
//! - any other token (no `username`, `sub` not its `client_id`) is neither, and has no role.
//!
//! Names are case-sensitive, as in Cognito; any other group or scope is ignored. A principal has
//! one or both roles, never none (a token without a usable role is refused: a user's is
//! [`crate::AuthError::NoRole`], a machine client's [`crate::AuthError::InsufficientScope`]).

/// The resource-server identifier whose scopes grant roles when `KOSHA_SCOPE_PREFIX` is unset
/// (SPEC §5): tokens with scope `kosha/agent` or `kosha/operator`.
pub const DEFAULT_SCOPE_PREFIX: &str = "kosha";

/// A role granted by a Cognito group or a resource-server scope (SPEC §5). What each role may
/// call is the gateway's business (its tool catalogue), not this crate's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Group `agent` or scope `<prefix>/agent`: the data tools (SPEC §4).
    Agent,
    /// Group `operator` or scope `<prefix>/operator`: `get_service_health` and the chaos
    /// header (SPEC §9).
    Operator,
}

impl Role {
    /// The Cognito group name for this role.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Operator => "operator",
        }
    }

    /// The role for a Cognito group name, or `None` for any other group.
    pub fn from_group(group: &str) -> Option<Role> {
        match group {
            "agent" => Some(Role::Agent),
            "operator" => Some(Role::Operator),
            _ => None,
        }
    }

    /// The known roles among `groups`, sorted and without duplicates.
    pub fn from_groups<'a>(groups: impl IntoIterator<Item = &'a str>) -> Vec<Role> {
        sorted(groups.into_iter().filter_map(Role::from_group))
    }

    /// The roles `scopes` grant under `prefix`, sorted and without duplicates.
    ///
    /// ```
    /// use kosha_auth::Role;
    /// let roles = Role::from_scopes(["kosha/operator", "openid", "kosha/agent"], "kosha");
    /// assert_eq!(roles, vec![Role::Agent, Role::Operator]);
    /// ```
    pub fn from_scopes<'a>(scopes: impl IntoIterator<Item = &'a str>, prefix: &str) -> Vec<Role> {
        sorted(
            scopes
                .into_iter()
                .filter_map(|s| Role::from_scope(s, prefix)),
        )
    }

    /// The scope that grants this role under `prefix`: `<prefix>/agent` or `<prefix>/operator`.
    ///
    /// ```
    /// use kosha_auth::Role;
    /// assert_eq!(Role::Operator.scope("kosha"), "kosha/operator");
    /// ```
    pub fn scope(self, prefix: &str) -> String {
        format!("{prefix}/{}", self.as_str())
    }

    /// The role `scope` grants under `prefix` (exactly `<prefix>/agent` or `<prefix>/operator`),
    /// or `None` for any other scope.
    pub fn from_scope(scope: &str, prefix: &str) -> Option<Role> {
        let name = scope.strip_prefix(prefix)?.strip_prefix('/')?;
        Role::from_group(name)
    }

    /// The roles of a token of kind `caller`: a user's from its `groups` only, a machine
    /// client's from its `scopes` under `prefix` only, none for [`Caller::Other`] (SPEC §5).
    ///
    /// ```
    /// use kosha_auth::{Caller, Role};
    /// // A user in the group `agent` who asked for the operator scope is an agent only.
    /// let roles = Role::of(Caller::User, ["agent"], ["kosha/operator"], "kosha");
    /// assert_eq!(roles, vec![Role::Agent]);
    /// ```
    pub fn of<'a, 'b>(
        caller: Caller,
        groups: impl IntoIterator<Item = &'a str>,
        scopes: impl IntoIterator<Item = &'b str>,
        prefix: &str,
    ) -> Vec<Role> {
        match caller {
            Caller::User => Role::from_groups(groups),
            Caller::Client => Role::from_scopes(scopes, prefix),
            Caller::Other => Vec::new(),
        }
    }
}

fn sorted(roles: impl Iterator<Item = Role>) -> Vec<Role> {
    let mut roles: Vec<Role> = roles.collect();
    roles.sort_unstable();
    roles.dedup();
    roles
}

/// The kind of a verified access token, which says where its roles come from (SPEC §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A user-pool user's token: it has `username`. Roles from `cognito:groups`.
    User,
    /// A machine client's token of the client-credentials grant: no `username`, and `sub` is
    /// the `client_id`. Roles from `scope`.
    Client,
    /// Neither (no `username`, `sub` another than `client_id`): no role.
    Other,
}

impl Caller {
    /// The kind of a token with these claims.
    ///
    /// ```
    /// use kosha_auth::Caller;
    /// assert_eq!(Caller::of(Some("alice"), "c1", "uuid-1"), Caller::User);
    /// assert_eq!(Caller::of(None, "c1", "c1"), Caller::Client);
    /// assert_eq!(Caller::of(None, "c1", "uuid-1"), Caller::Other);
    /// ```
    pub fn of(username: Option<&str>, client_id: &str, sub: &str) -> Caller {
        match username {
            Some(_) => Caller::User,
            None if sub == client_id => Caller::Client,
            None => Caller::Other,
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who is calling, from a verified access token. Put it in the request extensions; tools and
/// the rate limiter read it. It holds no part of the token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The Cognito app client id (`client_id` claim): the rate-limit key (SPEC §6) and the value
    /// of `X-Kosha-Principal` sent to core-api (SPEC §5).
    pub client_id: String,
    /// The `sub` claim (for client-credentials tokens, the client id again).
    pub subject: String,
    /// The `username` claim, when the token has one (user tokens).
    pub username: Option<String>,
    /// Known roles, sorted, deduplicated, never empty.
    pub roles: Vec<Role>,
    /// The `scope` claim split on spaces (may be empty).
    pub scopes: Vec<String>,
    /// The `cognito:groups` claim, every group (may be empty; only `agent` and `operator` grant
    /// a role). Policies read them (SPEC §5a `principal.groups`).
    pub groups: Vec<String>,
    /// The token's other string claims ([`Principal::TAGGED_EXCEPT`] aside), by name: Cognito's
    /// custom attributes (`custom:branch`) when a pre-token-generation trigger adds them. The
    /// entity tags of SPEC §5a (`principal.getTag("custom:branch")`).
    pub tags: std::collections::BTreeMap<String, String>,
    /// The `exp` claim: expiry in seconds since the Unix epoch.
    pub expires_at: u64,
}

impl Principal {
    /// The string claims that are not tags (SPEC §5a): those carried as the principal's id or
    /// attributes, and the token's own bookkeeping.
    pub const TAGGED_EXCEPT: [&'static str; 9] = [
        "sub",
        "client_id",
        "username",
        "scope",
        "token_use",
        "iss",
        "jti",
        "origin_jti",
        "event_id",
    ];

    /// Whether the principal has `role`.
    pub fn has_role(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// The person calling (SPEC §5 "The user"): a user token's `sub`, and for a machine
    /// client's token its `sub`, which is its `client_id`: a client-credentials token's user is
    /// its client. Sent to core-api as `X-Kosha-User`, part of every idempotency key and
    /// screening's scope, and logged (unlike `username`, which only audit events carry).
    pub fn user(&self) -> &str {
        &self.subject
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_groups_map_to_roles_and_others_are_ignored() {
        let roles = Role::from_groups(["operator", "admin", "agent", "Agent", "agent"]);
        assert_eq!(roles, vec![Role::Agent, Role::Operator]);
    }

    #[test]
    fn no_known_group_gives_no_role() {
        assert!(Role::from_groups(["admins", "AGENT", ""]).is_empty());
    }

    #[test]
    fn scopes_under_the_prefix_map_to_roles() {
        let roles = Role::from_scopes(["kosha/agent"], "kosha");
        assert_eq!(roles, vec![Role::Agent]);
        let roles = Role::from_scopes(["kosha/operator", "kosha/agent"], "kosha");
        assert_eq!(roles, vec![Role::Agent, Role::Operator]);
        // Another prefix, e.g. a resource server identified by a URL.
        let prefix = "https://kosha.example.com";
        let roles = Role::from_scopes(["https://kosha.example.com/operator"], prefix);
        assert_eq!(roles, vec![Role::Operator]);
    }

    #[test]
    fn other_scopes_grant_nothing() {
        for scope in [
            "kosha/mcp",
            "kosha/Agent",
            "kosha/agent/x",
            "koshaagent",
            "kosha-agent",
            "other/agent",
            "agent",
            "kosha/",
            "xkosha/agent",
            "openid",
        ] {
            assert_eq!(Role::from_scope(scope, "kosha"), None, "{scope}");
        }
    }

    #[test]
    fn a_user_takes_its_groups_only_and_a_client_its_scopes_only() {
        let scopes = ["kosha/operator", "kosha/agent"];
        let roles = Role::of(Caller::User, ["operator"], scopes, "kosha");
        assert_eq!(roles, vec![Role::Operator]);
        assert!(Role::of(Caller::User, ["admins"], scopes, "kosha").is_empty());
        let roles = Role::of(Caller::Client, ["agent"], ["kosha/operator"], "kosha");
        assert_eq!(roles, vec![Role::Operator]);
        assert!(Role::of(Caller::Client, ["agent", "operator"], ["openid"], "kosha").is_empty());
        assert!(Role::of(Caller::Other, ["agent"], ["kosha/agent"], "kosha").is_empty());
    }

    #[test]
    fn scopes_round_trip() {
        for role in [Role::Agent, Role::Operator] {
            assert_eq!(Role::from_scope(&role.scope("p"), "p"), Some(role));
        }
    }

    #[test]
    fn names_round_trip() {
        for role in [Role::Agent, Role::Operator] {
            assert_eq!(Role::from_group(role.as_str()), Some(role));
        }
    }
}
