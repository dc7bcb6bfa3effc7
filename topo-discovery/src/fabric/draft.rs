//! Where inference stands before domains are built: the hand-over from `infer` to `domains`.

use std::sync::Arc;

use super::model::{Finding, Host, Switch, SwitchLink};

/// Switches with tiers, hosts with NICs and rails, oriented links and the findings so far.
pub(crate) struct Draft {
    pub rails: Vec<Arc<str>>,
    pub switches: Vec<Switch>,
    /// Per switch: a stable string for hashing (its chassis ID, or its name).
    pub salts: Vec<String>,
    /// Per switch: confirmed by its own table or two observers (see `identity`).
    pub confirmed: Vec<bool>,
    pub hosts: Vec<Host>,
    pub links: Vec<SwitchLink>,
    pub findings: Vec<Finding>,
    pub depth: u8,
}
