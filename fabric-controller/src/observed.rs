//! What the API server holds of the objects the controller writes, as last seen: from the
//! watches, and from the answers to the controller's own writes (which arrive before the watch
//! reports them). An answer and a watch event for one object are ordered by resourceVersion
//! (comparable as integers since Kubernetes 1.35's comparable resource versions; an
//! unparsable one is taken as newer), so a late event never hides a newer write.

use std::collections::HashMap;

use kube::Resource;

/// A resourceVersion as a number, when it is one.
pub fn rv_of<K: Resource>(object: &K) -> Option<u64> {
    object.meta().resource_version.as_deref()?.parse().ok()
}

fn is_newer(old: Option<u64>, new: Option<u64>) -> bool {
    match (old, new) {
        (Some(o), Some(n)) => n >= o,
        _ => true,
    }
}

/// Objects of one kind by name, each with its resourceVersion.
#[derive(Debug, Clone)]
pub struct Store<T> {
    items: HashMap<String, (Option<u64>, T)>,
    relist: Option<HashMap<String, (Option<u64>, T)>>,
    listed: bool,
}

impl<T> Default for Store<T> {
    fn default() -> Self {
        Self {
            items: HashMap::new(),
            relist: None,
            listed: false,
        }
    }
}

impl<T> Store<T> {
    /// An object was added or changed (a watch event, or the answer to a write).
    pub fn apply(&mut self, name: String, rv: Option<u64>, value: T) {
        if let Some(relist) = &mut self.relist {
            relist.insert(name.clone(), (rv, value));
            return;
        }
        match self.items.get(&name) {
            Some((old, _)) if !is_newer(*old, rv) => {}
            _ => {
                self.items.insert(name, (rv, value));
            }
        }
    }

    /// The answer to our own write: applied even while a list is under way, which it survives.
    pub fn wrote(&mut self, name: String, rv: Option<u64>, value: T)
    where
        T: Clone,
    {
        if let Some(relist) = &mut self.relist {
            match relist.get(&name) {
                Some((old, _)) if !is_newer(*old, rv) => {}
                _ => {
                    relist.insert(name.clone(), (rv, value.clone()));
                }
            }
        }
        match self.items.get(&name) {
            Some((old, _)) if !is_newer(*old, rv) => {}
            _ => {
                self.items.insert(name, (rv, value));
            }
        }
    }

    /// An object was deleted.
    pub fn delete(&mut self, name: &str) {
        if let Some(relist) = &mut self.relist {
            relist.remove(name);
        }
        self.items.remove(name);
    }

    /// A watch starts listing everything again; the old view stands until the list ends.
    pub fn begin_list(&mut self) {
        self.relist = Some(HashMap::new());
    }

    /// The list is complete: it replaces the view.
    pub fn end_list(&mut self) {
        if let Some(relist) = self.relist.take() {
            self.items = relist;
        }
        self.listed = true;
    }

    /// Whether a complete list has been seen.
    pub fn listed(&self) -> bool {
        self.listed
    }

    /// The object named `name`.
    pub fn get(&self, name: &str) -> Option<&T> {
        self.items.get(name).map(|(_, v)| v)
    }

    /// Its resourceVersion.
    pub fn rv(&self, name: &str) -> Option<u64> {
        self.items.get(name).and_then(|(rv, _)| *rv)
    }

    /// Every object.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &T)> {
        self.items.iter().map(|(k, (_, v))| (k, v))
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_event_never_hides_a_newer_write() {
        let mut s: Store<&str> = Store::default();
        s.apply("a".into(), Some(5), "v5");
        s.wrote("a".into(), Some(9), "v9");
        s.apply("a".into(), Some(7), "v7 (event of an older change)");
        assert_eq!(s.get("a"), Some(&"v9"));
        s.apply("a".into(), Some(9), "v9 event");
        assert_eq!(s.get("a"), Some(&"v9 event"));
        s.apply("a".into(), None, "unparsable rv: taken");
        assert_eq!(s.get("a"), Some(&"unparsable rv: taken"));
    }

    #[test]
    fn a_new_list_replaces_the_view_when_complete() {
        let mut s: Store<u8> = Store::default();
        assert!(!s.listed());
        s.apply("gone".into(), Some(1), 1);
        s.begin_list();
        s.apply("kept".into(), Some(2), 2);
        assert_eq!(
            s.get("gone"),
            Some(&1),
            "the old view stands during the list"
        );
        s.wrote("mine".into(), Some(3), 3);
        s.end_list();
        assert!(s.listed());
        assert_eq!(s.get("gone"), None);
        assert_eq!(s.get("kept"), Some(&2));
        assert_eq!(
            s.get("mine"),
            Some(&3),
            "a write during the list survives it"
        );
        s.delete("kept");
        assert_eq!(s.len(), 1);
    }
}
