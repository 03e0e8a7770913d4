//! Listing decisions remembered per principal, tool and revision.
//!
//! A listing decision depends on nothing else: the listing set reads no context but the
//! revision ([`crate::listing`]), the principal entity is made from the verified token's
//! claims alone, and a policy set does not change while it is loaded. So a remembered answer is
//! the answer, exactly, and every `tools/call` of a tool whose policies read nothing of the call
//! (the built-in set) is decided by one look-up instead of a Cedar evaluation (about 120,000
//! instructions a call under callgrind, docs/benchmarks.md "Policy decisions").
//!
//! The key is the whole principal (every attribute and tag, each prefixed with its length in
//! 4 bytes so no two principals share one), never a hash of it: a collision would hand one
//! caller another's answer. At most [`MAX_ENTRIES`] are kept; a full memo is emptied and
//! refills.

use std::collections::HashMap;

use kosha_auth::Principal;
use parking_lot::Mutex;

use crate::decision::Decision;

/// The most listing decisions kept (each a key of a few hundred bytes and its decision).
pub const MAX_ENTRIES: usize = 8_192;

/// The remembered listing decisions of one policy set.
#[derive(Debug, Default)]
pub(crate) struct Memo(Mutex<HashMap<Vec<u8>, Decision>>);

impl Memo {
    /// The decision remembered for `key`, if any.
    pub fn get(&self, key: &[u8]) -> Option<Decision> {
        self.0.lock().get(key).cloned()
    }

    /// Remembers `decision` for `key`.
    pub fn put(&self, key: Vec<u8>, decision: Decision) {
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

/// The memo key of `principal` listing `tool` at `protocol_version`: each string prefixed by
/// its length, each list by its count, the username by whether there is one, so the key
/// reads back to exactly one principal.
pub(crate) fn key(principal: &Principal, tool: &str, protocol_version: &str) -> Vec<u8> {
    let mut key = Key(Vec::with_capacity(256));
    key.field(tool);
    key.field(protocol_version);
    key.field(principal.user());
    key.field(&principal.client_id);
    match &principal.username {
        Some(username) => {
            key.0.push(1);
            key.field(username);
        }
        None => key.0.push(0),
    }
    key.count(principal.roles.len());
    for role in &principal.roles {
        key.field(role.as_str());
    }
    key.count(principal.groups.len());
    for group in &principal.groups {
        key.field(group);
    }
    key.count(principal.scopes.len());
    for scope in &principal.scopes {
        key.field(scope);
    }
    key.count(principal.tags.len());
    for (name, value) in &principal.tags {
        key.field(name);
        key.field(value);
    }
    key.0
}

/// A memo key being written.
struct Key(Vec<u8>);

impl Key {
    /// A length or a count, in 4 bytes: the verified token these come from is a few KB at
    /// most, so none reaches `u32::MAX`, where it saturates.
    fn count(&mut self, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.0.extend_from_slice(&n.to_le_bytes());
    }

    fn field(&mut self, s: &str) {
        self.count(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
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
        let mut f = a.clone();
        f.username = None;
        keys.push(key(&f, "get_transaction", "2025-11-25"));
        let mut g = a.clone();
        g.username = Some("\u{0}none".into());
        keys.push(key(&g, "get_transaction", "2025-11-25"));
        let mut h = a.clone();
        h.groups = vec![];
        h.scopes = vec!["ag".into(), "ent".into()];
        keys.push(key(&h, "get_transaction", "2025-11-25"));
        let unique: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{keys:#?}");
    }

    #[test]
    fn a_full_memo_empties_and_refills() {
        let memo = Memo::default();
        let allow = Decision::Allow { policies: vec![] };
        for i in 0..MAX_ENTRIES {
            memo.put(i.to_string().into_bytes(), allow.clone());
        }
        assert_eq!(memo.len(), MAX_ENTRIES);
        memo.put(b"one more".to_vec(), allow.clone());
        assert_eq!(memo.len(), 1);
        assert_eq!(memo.get(b"one more"), Some(allow));
        assert_eq!(memo.get(b"0"), None);
    }
}
