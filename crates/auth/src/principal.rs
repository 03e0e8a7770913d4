//! The authenticated caller: [`Principal`] and its [`Role`]s (SPEC §5).
//!
//! Roles come from the Cognito `cognito:groups` claim: the group `agent` is [`Role::Agent`], the
//! group `operator` is [`Role::Operator`]. Group names are case-sensitive, as in Cognito; any
//! other group is ignored. A principal has one or both roles, never none (a token without a
//! usable role is [`crate::AuthError::NoRole`]).

/// A role granted by a Cognito group (SPEC §5). What each role may call is the gateway's
/// business (its tool catalogue), not this crate's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Group `agent`: the data tools (SPEC §4).
    Agent,
    /// Group `operator`: `get_service_health` and the chaos header (SPEC §9).
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
        let mut roles: Vec<Role> = groups.into_iter().filter_map(Role::from_group).collect();
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
    fn names_round_trip() {
        for role in [Role::Agent, Role::Operator] {
            assert_eq!(Role::from_group(role.as_str()), Some(role));
        }
    }
}
