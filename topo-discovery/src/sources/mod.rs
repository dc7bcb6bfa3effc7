//! Input documents to neighbour tables, whatever produced them.
//!
//! A document is the text of one file. It may hold:
//! - Spinel neighbour tables (`spinel.dev/neighbors/v1`): one object, an array of them, or several
//!   objects one after another (what `spinelctl lldp listen` prints);
//! - lldpd's JSON for one system, `-f json0` (stable) or `-f json` (whose shape changes with the
//!   number of neighbours), as one or more `lldpcli` outputs concatenated:
//!   `show interfaces details` (the system's own chassis and the Port ID each port advertises),
//!   `show chassis details` (its own chassis) and `show neighbors details`.
//!
//! Parsing is pure: the caller reads the file and names it in errors.

pub mod lldpd;
mod spinel;

use serde_json::Value;

use crate::fabric::{AdvertisedPort, FabricBuilder, ObserverFacts};
use spinel_wire::neighbor::{Capabilities, NeighborTable, SCHEMA};

/// Which format a capture came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Spinel's neighbour-table schema.
    Spinel,
    /// `lldpcli -f json0`.
    LldpdJson0,
    /// `lldpcli -f json`.
    LldpdJson,
}

/// One system's view, converted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// The neighbour table.
    pub table: NeighborTable,
    /// The Port ID the observer advertises on each of its ports, when the input says
    /// (lldpd `show interfaces`); resolves aliases and MAC Port IDs to interface names.
    pub advertised: Vec<AdvertisedPort>,
    /// The input format.
    pub format: Format,
    /// The capabilities the observer advertises, when the capture says (lldpd's own chassis).
    pub own_capabilities: Option<Capabilities>,
    /// Where the observer's name came from.
    pub observer_named_by: NamedBy,
    /// Where a capture of neighbours only came from ([`ParseOptions::source`]), to name it
    /// when its box is decided by cabling.
    pub source: Option<String>,
}

/// Where a capture's observer name came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedBy {
    /// The capture itself (a Spinel table's observer, lldpd's own chassis).
    Capture,
    /// The caller ([`ParseOptions::observer`], `NAME=FILE`).
    Caller,
    /// The caller's fallback ([`ParseOptions::fallback_observer`], the file name): the capture
    /// has only neighbours.
    Fallback,
}

impl Capture {
    /// Adds this capture to a builder. lldpd's role (from its capabilities) is passed on as
    /// capability evidence, not as a stated role.
    pub fn add_to(&self, builder: &mut FabricBuilder) {
        let stand_in = (self.observer_named_by == NamedBy::Fallback)
            .then(|| self.source.as_deref().unwrap_or(&self.table.observer.name));
        let facts = ObserverFacts {
            capabilities: self.own_capabilities.as_ref(),
            role_from_capabilities: self.format != Format::Spinel,
            stand_in,
        };
        builder.add_capture(&self.table, &facts, &self.advertised);
    }
}

/// Parsing settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Observer name for lldpd output, overriding (or standing in for) its local chassis name.
    pub observer: Option<String>,
    /// Observer name for lldpd output that lacks its own chassis (neighbours only), when
    /// [`Self::observer`] is not given: what the CLI takes from the file name.
    pub fallback_observer: Option<String>,
    /// Where the document came from (a path, a ConfigMap key), named when a capture of
    /// neighbours only is matched to its box ([`crate::fabric::FabricBuilder::resolve_stand_ins`]).
    pub source: Option<String>,
}

impl ParseOptions {
    /// Settings for a document read from `source` whose file (or key) is named `file_name`:
    /// a capture of neighbours only stands under [`stand_in_name`] until its cabling says
    /// which box it is.
    pub fn for_file(source: &str, file_name: &str) -> Self {
        Self {
            observer: None,
            fallback_observer: stand_in_name(file_name),
            source: Some(source.to_owned()),
        }
    }
}

/// The name a capture of neighbours only stands under, from its file's name: without the
/// known extensions (`.json`, `.json0`, `.txt`, `.lldp`), however many (`lf1a.json0.json` is
/// `lf1a`). `None` when nothing is left.
pub fn stand_in_name(file_name: &str) -> Option<String> {
    let mut stem = file_name;
    while let Some((rest, "json" | "json0" | "txt" | "lldp")) = stem.rsplit_once('.') {
        stem = rest;
    }
    (!stem.is_empty()).then(|| stem.to_owned())
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// Not JSON at all (or truncated).
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// Nothing in it.
    #[error("no JSON document found (the input is empty)")]
    Empty,
    /// A neighbour table of another schema version.
    #[error(
        "document {index}: neighbour table schema {found:?} is not supported (expected {SCHEMA:?})"
    )]
    Schema {
        /// 1-based document number.
        index: usize,
        /// The schema it declares.
        found: String,
    },
    /// A neighbour table that does not match the schema.
    #[error("document {index}: not a valid {SCHEMA} table: {source}")]
    Table {
        /// 1-based document number.
        index: usize,
        /// What serde found wrong.
        #[source]
        source: serde_json::Error,
    },
    /// Neither a table nor lldpd output.
    #[error(
        "document {index}: not a Spinel neighbour table (no \"schema\" field) nor lldpcli JSON \
         (no \"lldp\" or \"local-chassis\" key)"
    )]
    Unrecognised {
        /// 1-based document number.
        index: usize,
    },
    /// lldpd output that cannot be understood.
    #[error(transparent)]
    Lldpd(#[from] lldpd::LldpdError),
    /// The bytes are not UTF-8 text.
    #[error("not UTF-8 text (invalid byte at offset {offset}): not a capture")]
    NotUtf8 {
        /// Where the first invalid byte is.
        offset: usize,
    },
}

/// What [`ingest`] added to the builder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ingested {
    /// Systems' tables added.
    pub tables: usize,
    /// Observers named by [`ParseOptions::fallback_observer`] (neighbours-only lldpd output).
    pub named_by_fallback: Vec<String>,
}

/// Reads one file's bytes straight into `builder`: Spinel tables on a fast path that borrows
/// from `bytes` and skips what inference does not read; anything else (lldpd output, invalid
/// tables) through [`parse`], with its checks and error messages. Nothing is added on error.
pub fn ingest(
    bytes: &[u8],
    options: &ParseOptions,
    builder: &mut FabricBuilder,
) -> Result<Ingested, SourceError> {
    if let Some(tables) = spinel::ingest(bytes, builder) {
        return Ok(Ingested {
            tables,
            named_by_fallback: Vec::new(),
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| SourceError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let captures = parse(text, options)?;
    let mut done = Ingested {
        tables: captures.len(),
        named_by_fallback: Vec::new(),
    };
    for c in &captures {
        if c.observer_named_by == NamedBy::Fallback {
            done.named_by_fallback.push(c.table.observer.name.clone());
        }
        c.add_to(builder);
    }
    Ok(done)
}

/// Parses one document into captures.
pub fn parse(text: &str, options: &ParseOptions) -> Result<Vec<Capture>, SourceError> {
    let mut captures = Vec::new();
    let mut lldpd_docs = Vec::new();
    let mut seen = 0usize;
    for (i, value) in serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .enumerate()
    {
        let index = i + 1;
        let value = value.map_err(SourceError::Json)?;
        seen += 1;
        match &value {
            Value::Array(items) if items.iter().all(|v| v.get("schema").is_some()) => {
                for item in items {
                    captures.push(table_capture(index, item.clone())?);
                }
            }
            Value::Object(map) if map.contains_key("schema") => {
                captures.push(table_capture(index, value)?);
            }
            Value::Object(map) if map.contains_key("lldp") || map.contains_key("local-chassis") => {
                lldpd_docs.push(value);
            }
            _ => return Err(SourceError::Unrecognised { index }),
        }
    }
    if seen == 0 {
        return Err(SourceError::Empty);
    }
    if !lldpd_docs.is_empty() {
        captures.push(lldpd::capture(&lldpd_docs, options)?);
    }
    Ok(captures)
}

fn table_capture(index: usize, value: Value) -> Result<Capture, SourceError> {
    if let Some(found) = value.get("schema").and_then(Value::as_str)
        && found != SCHEMA
    {
        return Err(SourceError::Schema {
            index,
            found: found.to_owned(),
        });
    }
    let table: NeighborTable =
        serde_json::from_value(value).map_err(|source| SourceError::Table { index, source })?;
    Ok(Capture {
        table,
        advertised: Vec::new(),
        format: Format::Spinel,
        own_capabilities: None,
        observer_named_by: NamedBy::Capture,
        source: None,
    })
}
