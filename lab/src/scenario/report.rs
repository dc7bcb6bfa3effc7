//! The main job's narrative: printed as it happens (unless JSON was asked for) and kept as a
//! JSON document with every figure and object the run showed.

use std::io::Write;

use serde::Serialize;
use serde_json::{Map, Value};

/// The run's narrative and results.
pub struct Report {
    quiet: bool,
    doc: Map<String, Value>,
    figures: Map<String, Value>,
}

impl Report {
    /// A report that prints as it goes unless `quiet` (JSON output).
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            doc: Map::new(),
            figures: Map::new(),
        }
    }

    /// A section heading.
    pub fn section(&mut self, title: &str) {
        self.say(&format!("\n{title}"));
    }

    /// One line of narrative.
    pub fn say(&mut self, line: &str) {
        if !self.quiet {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }

    /// A measured figure (milliseconds, counts).
    pub fn figure(&mut self, name: &str, value: u64) {
        self.figures.insert(name.to_owned(), value.into());
    }

    /// Keeps `value` under `key` in the JSON document.
    pub fn json(&mut self, key: &str, value: &impl Serialize) -> anyhow::Result<()> {
        self.doc
            .insert(key.to_owned(), serde_json::to_value(value)?);
        Ok(())
    }

    /// The whole document.
    pub fn document(&self) -> Value {
        let mut doc = self.doc.clone();
        doc.insert("figures".into(), Value::Object(self.figures.clone()));
        Value::Object(doc)
    }
}
