//! Semantic validation: what YAML types cannot say. Every issue names its field as a path of
//! names (`switches[leaf01].networks[rail0].subnet`), and the switch when there is one.

mod addressing;
mod names;
mod profile;
mod switches;

use std::fmt;

use serde::Serialize;

use super::Intent;
use crate::plan::FabricPlan;

pub(crate) use names::{valid_host_name, valid_nic_name, valid_port_name, valid_switch_name};

/// How bad an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueSeverity {
    /// The intent cannot be rendered or would build a broken fabric.
    Error,
    /// Legal, but probably not what was meant.
    Warning,
}

/// One problem in an intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// Error or warning.
    pub severity: IssueSeverity,
    /// The field, as a path of names.
    pub field: String,
    /// The switch it concerns, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl Issue {
    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == IssueSeverity::Error
    }

    /// Every part is bounded: an intent with a 10 MB name gets a readable error, not the name.
    fn error(field: impl Into<String>, switch: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            severity: IssueSeverity::Error,
            field: bounded(field.into(), 4 * super::MAX_ECHO_BYTES),
            switch: switch.map(|s| bounded(s.to_owned(), super::MAX_ECHO_BYTES)),
            message: bounded(message.into(), 16 * super::MAX_ECHO_BYTES),
        }
    }

    fn warning(field: impl Into<String>, switch: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            severity: IssueSeverity::Warning,
            ..Self::error(field, switch, message)
        }
    }
}

/// `text` cut to `max` bytes (at a character boundary), saying how long it was.
pub(crate) fn bounded(mut text: String, max: usize) -> String {
    if text.len() > max {
        let len = text.len();
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(&format!("... ({len} bytes)"));
    }
    text
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            IssueSeverity::Error => "error",
            IssueSeverity::Warning => "warning",
        };
        match &self.switch {
            Some(s) => write!(
                f,
                "{severity}: {} (switch {s}): {}",
                self.field, self.message
            ),
            None => write!(f, "{severity}: {}: {}", self.field, self.message),
        }
    }
}

/// Collected issues.
#[derive(Default)]
pub(crate) struct Issues(Vec<Issue>);

impl Issues {
    pub(crate) fn error(&mut self, field: impl Into<String>, switch: Option<&str>, msg: String) {
        self.0.push(Issue::error(field, switch, msg));
    }

    pub(crate) fn warning(&mut self, field: impl Into<String>, switch: Option<&str>, msg: String) {
        self.0.push(Issue::warning(field, switch, msg));
    }
}

/// Every issue in `intent`, errors first, then in the order found.
pub fn validate(intent: &Intent) -> Vec<Issue> {
    let mut issues = Issues::default();
    if !valid_switch_name(&intent.fabric) {
        issues.error(
            "fabric",
            None,
            format!(
                "{} is not a valid fabric name (letters, digits, '.', '_', '-'; at most 63)",
                super::cut(&intent.fabric)
            ),
        );
    }
    profile::check(intent, &mut issues);
    let plan = FabricPlan::new(intent);
    switches::check(intent, &plan, &mut issues);
    addressing::check(intent, &plan, &mut issues);
    let mut all = issues.0;
    // Stable: errors first, each group in the order found.
    all.sort_by_key(|i| i.severity);
    all
}

/// `switches[NAME]`.
pub(crate) fn switch_field(name: &str) -> String {
    format!("switches[{name}]")
}
