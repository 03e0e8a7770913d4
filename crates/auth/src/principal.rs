//! The authenticated caller: [`Principal`] and its [`Role`]s (SPEC §5).
//!
//! Roles come from two claims, and a token may use either or both (the roles are their union):
//! - `cognito:groups` (user-pool users): the group `agent` is [`Role::Agent`], the group
//!   `operator` is [`Role::Operator`];
//! - `scope` (machine clients of the client-credentials grant, whose Cognito access tokens carry
//!   no groups): the resource-server scopes `<prefix>/agent` and `<prefix>/operator`, where the
//!   prefix is `KOSHA_SCOPE_PREFIX` (default [`DEFAULT_SCOPE_PREFIX`], the resource server's
//!   identifier).
//!
//! Names are case-sensitive, as in Cognito; any other group or scope is ignored. A principal has
//! one or both roles, never none (a token without a usable role is [`crate::AuthError::NoRole`]).

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
        Role::from_claims(groups, std::iter::empty(), DEFAULT_SCOPE_PREFIX)
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

    /// The roles of a token: those its `groups` name and those its `scopes` grant under
    /// `prefix`, sorted and without duplicates (SPEC §5).
    ///
    /// ```
    /// use kosha_auth::Role;
    /// let roles = Role::from_claims(["agent"], ["kosha/operator", "kosha/mcp"], "kosha");
    /// assert_eq!(roles, vec![Role::Agent, Role::Operator]);
    /// ```
    pub fn from_claims<'a, 'b>(
        groups: impl IntoIterator<Item = &'a str>,
        scopes: impl IntoIterator<Item = &'b str>,
        prefix: &str,
    ) -> Vec<Role> {
        let mut roles: Vec<Role> = groups
            .into_iter()
            .filter_map(Role::from_group)
            .chain(
                scopes
                    .into_iter()
                    .filter_map(|s| Role::from_scope(s, prefix)),
            )
            .collect();
        roles.sort_unstable();
        roles.dedup();
        roles
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
    /// The `exp` claim: expiry in seconds since the Unix epoch.
    pub expires_at: u64,
}

impl Principal {
    /// Whether the principal has `role`.
    pub fn has_role(&self, role: Role) -> bool {
        self.roles.contains(&role)
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
        let roles = Role::from_claims(std::iter::empty(), ["kosha/agent"], "kosha");
        assert_eq!(roles, vec![Role::Agent]);
        let roles = Role::from_claims(
            std::iter::empty(),
            ["kosha/operator", "kosha/agent"],
            "kosha",
        );
        assert_eq!(roles, vec![Role::Agent, Role::Operator]);
        // Another prefix, e.g. a resource server identified by a URL.
        let prefix = "https://kosha.example.com";
        let roles = Role::from_claims(
            std::iter::empty(),
            ["https://kosha.example.com/operator"],
            prefix,
        );
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
    fn groups_and_scopes_are_united() {
        let roles = Role::from_claims(["operator"], ["kosha/operator", "kosha/agent"], "kosha");
        assert_eq!(roles, vec![Role::Agent, Role::Operator]);
        assert!(Role::from_claims(["admins"], ["kosha/mcp"], "kosha").is_empty());
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
