//! The caller's word on which NICs are the fabric's ([`FabricNics`]), answered per host NIC.

use rustc_hash::FxHashMap;

use crate::fabric::options::FabricNics;
use crate::fabric::raw::Interner;

use super::naming::NameIndex;

/// Answers "is this NIC of this host a fabric NIC?", caching answers per interned string.
pub(super) struct NicFilter<'a> {
    nics: &'a FabricNics,
    /// Host names of a per-host selection, to their NIC lists.
    per_host: NameIndex<usize>,
    lists: Vec<&'a [String]>,
    /// Matching: answer per interned NIC name.
    cache: FxHashMap<u32, bool>,
}

impl<'a> NicFilter<'a> {
    /// A filter for `nics`.
    pub(super) fn new(nics: &'a FabricNics) -> Self {
        let mut per_host = NameIndex::default();
        let mut lists = Vec::new();
        if let FabricNics::PerHost(map) = nics {
            for (host, list) in map {
                per_host.insert(&std::sync::Arc::from(host.as_str()), lists.len());
                lists.push(list.as_slice());
            }
        }
        Self {
            nics,
            per_host,
            lists,
            cache: FxHashMap::default(),
        }
    }

    /// Whether the selection names hosts (per-host lists).
    pub(super) fn names_hosts(&self) -> bool {
        !self.per_host.is_empty()
    }

    /// Whether `host` is named by a per-host selection.
    pub(super) fn names_host(&self, host: &str) -> bool {
        self.per_host.lookup(host).len() == 1
    }

    /// Whether NIC `nic` (interned) of host `host` is a fabric NIC; `None` when the selection
    /// says nothing about this host.
    pub(super) fn selects(&mut self, strings: &Interner, host: &str, nic: u32) -> Option<bool> {
        match self.nics {
            FabricNics::Inferred => None,
            FabricNics::Matching(patterns) => Some(*self.cache.entry(nic).or_insert_with(|| {
                let name = strings.get(nic);
                patterns.iter().any(|p| p.matches(name))
            })),
            FabricNics::PerHost(_) => match self.per_host.lookup(host) {
                [only] => {
                    let name = strings.get(nic);
                    Some(self.lists[*only].iter().any(|n| **n == **name))
                }
                _ => None,
            },
        }
    }
}
