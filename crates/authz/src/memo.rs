//! Listing decisions remembered per principal, tool and revision.
//!
//! A listing decision depends on nothing else: the listing set reads no context but the
//! revision ([`crate::listing`]), the principal entity is made from the verified token's
//! claims alone, and a policy set does not change while it is loaded. So a remembered answer is
//! the answer, exactly, and every `tools/call` of a tool whose policies read nothing of the call
//! (the built-in set) is decided by one look-up instead of a Cedar evaluation (about 120,000
//! instructions a call under callgrind, docs/benchmarks.md "Policy decisions").
//!
//! The key is the whole principal (every attribute and tag, each length-prefixed so no two
//! principals share one), never a hash of it: a collision would hand one caller another's
//! answer. At most [`MAX_ENTRIES`] are kept; a full memo is emptied and refills.

use std::collections::HashMap;

use kosha_auth::Principal;
use parking_lot::Mutex;

use crate::decision::Decision;

/// The most listing decisions kept (each a key of a few hundred bytes and its decision).
pub const MAX_ENTRIES: usize = 8_192;

/// The remembered listing decisions of one policy set.
#[derive(Debug, Default)]
pub(crate) struct Memo(Mutex<HashMap<String, Decision>>);

impl Memo {
    /// The decision remembered for `key`, if any.
    pub fn get(&self, key: &str) -> Option<Decision> {
        self.0.lock().get(key).cloned()
    }

    /// Remembers `decision` for `key`.
    pub fn put(&self, key: String, decision: Decision) {
        let mut map = self.0.lock();
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(key, decision);
    }

    /// How many decisions are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.lock().len()
    }
}

/// The memo key of `principal` listing `tool` at `protocol_version`.
pub(crate) fn key(principal: &Principal, tool: &str, protocol_version: &str) -> String {
    let mut key = String::with_capacity(256);
    let mut field = |s: &str| {
        key.push_str(&s.len().to_string());
        key.push(':');
        key.push_str(s);
    };
    field(tool);
    field(protocol_version);
    field(principal.user());
    field(&principal.client_id);
    field(principal.username.as_deref().unwrap_or("\u{0}none"));
    for role in &principal.roles {
        field(role.as_str());
    }
    field("\u{0}groups");
    for group in &principal.groups {
        field(group);
    }
    field("\u{0}scopes");
    for scope in &principal.scopes {
        field(scope);
    }
    field("\u{0}tags");
    for (name, value) in &principal.tags {
        field(name);
        field(value);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::principal;

    #[test]
    fn principals_that_differ_anywhere_have_different_keys() {
        let a = principal("u1", &["agent"]);
        let mut keys = vec![key(&a, "get_transaction", "2025-11-25")];
        keys.push(key(&a, "list_transactions", "2025-11-25"));
        keys.push(key(&a, "get_transaction", "2026-07-28"));
        let mut b = a.clone();
        b.groups = vec!["ag".into(), "ent".into()];
        keys.push(key(&b, "get_transaction", "2025-11-25"));
        let mut c = a.clone();
        c.tags.insert("custom:branch".into(), "north".into());
        keys.push(key(&c, "get_transaction", "2025-11-25"));
        let mut d = a.clone();
        d.client_id = "other".into();
        keys.push(key(&d, "get_transaction", "2025-11-25"));
        let mut e = a.clone();
        e.scopes = vec!["agent".into()];
        keys.push(key(&e, "get_transaction", "2025-11-25"));
        let unique: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{keys:#?}");
    }

    #[test]
    fn a_full_memo_empties_and_refills() {
        let memo = Memo::default();
        let allow = Decision::Allow { policies: vec![] };
        for i in 0..MAX_ENTRIES {
            memo.put(i.to_string(), allow.clone());
        }
        assert_eq!(memo.len(), MAX_ENTRIES);
        memo.put("one more".into(), allow.clone());
        assert_eq!(memo.len(), 1);
        assert_eq!(memo.get("one more"), Some(allow));
        assert_eq!(memo.get("0"), None);
    }
}
