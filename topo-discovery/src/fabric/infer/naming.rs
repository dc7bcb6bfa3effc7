//! One box, several spellings: switches advertise `leaf1.fab.example` while files and Kubernetes
//! nodes say `leaf1`. Two names denote the same system when they are equal ignoring ASCII
//! case, or when one has no dot and equals the other's first label. Two fully qualified names
//! must match whole: `leaf1.pod1.x` and `leaf1.pod2.x` stay apart.

use std::borrow::Cow;
use std::sync::Arc;

use rustc_hash::FxHashMap;

/// The first label of a name (`leaf1` of `leaf1.fab.example`).
pub(super) fn short(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Whether two names denote the same system by the rule above.
pub(super) fn same_system(a: &str, b: &str) -> bool {
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    match (a.contains('.'), b.contains('.')) {
        (true, false) => short(a).eq_ignore_ascii_case(b),
        (false, true) => short(b).eq_ignore_ascii_case(a),
        _ => false,
    }
}

fn lower(name: &str) -> Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

/// Names with a payload each, looked up by any spelling of the same system. Keys share the
/// interner's strings when they are already lowercase (the usual case): 100k host names cost
/// no copy.
#[derive(Debug)]
pub(super) struct NameIndex<T> {
    /// Lowercased full name to payloads.
    full: FxHashMap<Arc<str>, Vec<T>>,
    /// Lowercased first label of dotted names to payloads.
    short: FxHashMap<Arc<str>, Vec<T>>,
}

impl<T> Default for NameIndex<T> {
    fn default() -> Self {
        Self {
            full: FxHashMap::default(),
            short: FxHashMap::default(),
        }
    }
}

impl<T: Copy + PartialEq> NameIndex<T> {
    /// Adds `name` with `payload` (a payload is kept once per spelling).
    pub(super) fn insert(&mut self, name: &Arc<str>, payload: T) {
        let full: Arc<str> = match lower(name) {
            Cow::Borrowed(_) => name.clone(),
            Cow::Owned(l) => Arc::from(l),
        };
        if full.contains('.') {
            push_unique(
                self.short.entry(Arc::from(short(&full))).or_default(),
                payload,
            );
        }
        push_unique(self.full.entry(full).or_default(), payload);
    }

    /// Payloads of the names that denote the same system as `name`: an exact match (ignoring
    /// case) first; else a short name against dotted names' first labels, or a dotted name's
    /// first label against short names.
    pub(super) fn lookup(&self, name: &str) -> &[T] {
        let full = lower(name);
        if let Some(found) = self.full.get(full.as_ref()) {
            return found;
        }
        let found = if full.contains('.') {
            // Only dotless names are stored under a key without a dot.
            self.full.get(short(&full))
        } else {
            self.short.get(full.as_ref())
        };
        found.map_or(&[], Vec::as_slice)
    }

    /// Whether nothing was inserted.
    pub(super) fn is_empty(&self) -> bool {
        self.full.is_empty()
    }
}

fn push_unique<T: PartialEq>(list: &mut Vec<T>, payload: T) {
    if !list.contains(&payload) {
        list.push(payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_qualified_spellings_find_each_other() {
        let mut idx = NameIndex::default();
        idx.insert(&Arc::from("leaf1.fab.example"), 1);
        idx.insert(&Arc::from("Spine1"), 2);
        idx.insert(&Arc::from("h1"), 3);
        assert_eq!(idx.lookup("leaf1"), [1]);
        assert_eq!(idx.lookup("LEAF1.fab.example"), [1]);
        assert_eq!(idx.lookup("spine1.fab.example"), [2]);
        assert_eq!(idx.lookup("h1.other.example"), [3]);
        assert!(
            idx.lookup("leaf1.pod2.example").is_empty(),
            "FQDNs match whole"
        );
        assert!(idx.lookup("leaf").is_empty());
        idx.insert(&Arc::from("leaf1.pod2.example"), 4);
        assert_eq!(idx.lookup("leaf1"), [1, 4], "ambiguous: both");
        assert_eq!(short("a.b.c"), "a");
    }
}
