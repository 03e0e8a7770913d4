//! Principals for examples and tests.

use kosha_auth::{Principal, Role};

/// A user `sub` of app client `app`, in `groups` (whose `agent` and `operator` are its roles).
///
/// ```
/// let p = kosha_authz::testing::principal("alice", &["agent", "supervisor"]);
/// assert_eq!(p.roles, vec![kosha_auth::Role::Agent]);
/// assert_eq!(p.groups, ["agent", "supervisor"]);
/// ```
pub fn principal(sub: &str, groups: &[&str]) -> Principal {
    Principal {
        client_id: "app".to_owned(),
        subject: sub.to_owned(),
        username: Some(sub.to_owned()),
        roles: Role::from_groups(groups.iter().copied()),
        scopes: Vec::new(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        tags: Default::default(),
        expires_at: u64::MAX,
    }
}

/// A machine client `client_id` of the client-credentials grant with `roles`.
pub fn machine(client_id: &str, roles: &[Role]) -> Principal {
    Principal {
        client_id: client_id.to_owned(),
        subject: client_id.to_owned(),
        username: None,
        roles: roles.to_vec(),
        scopes: roles.iter().map(|r| r.scope("kosha")).collect(),
        groups: Vec::new(),
        tags: Default::default(),
        expires_at: u64::MAX,
    }
}
