//! Reading an intent file with hard limits, and errors that name the field and the switch.
//!
//! Intent files come from operators and generators, and the checker may run on files collected
//! from elsewhere, so parsing is bounded before anything is allocated for the document: the
//! byte size is checked first, then the YAML parser's budget caps depth, nodes, events, scalar
//! bytes, anchors and aliases (alias bombs), and duplicate keys are errors.

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde_saphyr::budget::Budget;
use serde_saphyr::options::{DuplicateKeyPolicy, Options};

use super::{Intent, SCHEMA, validate::Issue};

/// Parser limits. The defaults fit a 4,000-switch, 64,000-host intent in the short port form
/// with room to spare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file, bytes.
    pub max_bytes: u64,
    /// Deepest nesting of mappings and sequences (the schema needs 6).
    pub max_depth: usize,
    /// Most YAML nodes (scalars, mappings, sequences).
    pub max_nodes: usize,
    /// Most anchors; aliases are capped at ten per anchor.
    pub max_anchors: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 128 * 1024 * 1024,
            max_depth: 12,
            max_nodes: 8_000_000,
            max_anchors: 1_000,
        }
    }
}

/// Why an intent could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
pub enum IntentError {
    /// The file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's answer.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than the limit.
    #[error("{path}: {size} bytes is more than the {limit}-byte limit for an intent file")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size (at least).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Not a regular file (a FIFO, a device, a directory): refused before it is read, so a
    /// FIFO nobody writes to cannot block the reader.
    #[error("{path}: {kind}, not a regular file; give the intent as a file")]
    NotRegular {
        /// The file.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// Not UTF-8.
    #[error("{path}: not UTF-8 text")]
    NotUtf8 {
        /// The file.
        path: String,
    },
    /// The YAML is malformed, breaks a limit, or does not match the schema.
    #[error("{path}: {}{message}", field_prefix(field.as_deref(), switch.as_deref()))]
    Yaml {
        /// The file.
        path: String,
        /// Field path (`switches[3].speed_gbps`), when known.
        field: Option<String>,
        /// The switch the field belongs to, when known.
        switch: Option<String>,
        /// The parser's message, with line and column.
        message: String,
    },
    /// Another schema version.
    #[error("{path}: schema {found:?} is not supported (expected {SCHEMA:?})")]
    Schema {
        /// The file.
        path: String,
        /// What it declares.
        found: String,
    },
    /// Parsed, but semantically invalid.
    #[error("{path}: {} error(s):\n{}", issues.len(), IssueList(issues))]
    Invalid {
        /// The file.
        path: String,
        /// Every error found.
        issues: Vec<Issue>,
    },
}

fn field_prefix(field: Option<&str>, switch: Option<&str>) -> String {
    match (field, switch) {
        (Some(f), Some(s)) => format!("{f} (switch {s}): "),
        (Some(f), None) => format!("{f}: "),
        _ => String::new(),
    }
}

struct IssueList<'a>(&'a [Issue]);

impl fmt::Display for IssueList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "  {issue}")?;
        }
        Ok(())
    }
}

/// Reads, parses and validates an intent file with the default [`Limits`].
pub fn load(path: &Path) -> Result<Intent, IntentError> {
    load_with_limits(path, &Limits::default())
}

/// Reads and parses an intent file within `limits`, without semantic validation (for callers
/// that show warnings as well as errors).
pub fn read(path: &Path, limits: &Limits) -> Result<Intent, IntentError> {
    let name = path.display().to_string();
    let text = read_bounded(path, &name, limits.max_bytes)?;
    Intent::parse_with_limits(&text, &name, limits)
}

/// Reads, parses and validates an intent file.
pub fn load_with_limits(path: &Path, limits: &Limits) -> Result<Intent, IntentError> {
    let name = path.display().to_string();
    let intent = read(path, limits)?;
    let issues: Vec<Issue> = super::validate(&intent)
        .into_iter()
        .filter(Issue::is_error)
        .collect();
    if issues.is_empty() {
        Ok(intent)
    } else {
        Err(IntentError::Invalid { path: name, issues })
    }
}

fn read_bounded(path: &Path, name: &str, limit: u64) -> Result<String, IntentError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let read_err = |source| IntentError::Read {
        path: name.to_owned(),
        source,
    };
    regular(&std::fs::metadata(path).map_err(read_err)?, name)?;
    // Non-blocking open: should the path become a FIFO after the check, opening it does not
    // wait for a writer; the descriptor is checked again below.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(read_err)?;
    let meta = file.metadata().map_err(read_err)?;
    regular(&meta, name)?;
    let size = meta.len();
    if size > limit {
        return Err(IntentError::TooLarge {
            path: name.to_owned(),
            size,
            limit,
        });
    }
    // The size can change between stat and read (a growing file): read at most one byte past
    // the limit to notice.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > limit {
        return Err(IntentError::TooLarge {
            path: name.to_owned(),
            size: bytes.len() as u64,
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|_| IntentError::NotUtf8 {
        path: name.to_owned(),
    })
}

/// Refuses anything but a regular file, naming what it is.
fn regular(meta: &std::fs::Metadata, name: &str) -> Result<(), IntentError> {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Err(IntentError::NotRegular {
        path: name.to_owned(),
        kind,
    })
}

impl Intent {
    /// Parses YAML text (no semantic validation); `name` appears in errors.
    pub fn parse(text: &str, name: &str) -> Result<Self, IntentError> {
        Self::parse_with_limits(text, name, &Limits::default())
    }

    /// Parses YAML text within `limits` (no semantic validation).
    pub fn parse_with_limits(text: &str, name: &str, limits: &Limits) -> Result<Self, IntentError> {
        if text.len() as u64 > limits.max_bytes {
            return Err(IntentError::TooLarge {
                path: name.to_owned(),
                size: text.len() as u64,
                limit: limits.max_bytes,
            });
        }
        // The fast path has no path tracking; only a failed parse is parsed again to name the
        // field (serde_path_to_error costs a third of the time on a large intent).
        let intent = match serde_saphyr::from_str_with_options::<Intent>(text, options(limits)) {
            Ok(intent) => intent,
            Err(_) => return Err(located_error(text, name, limits)),
        };
        if intent.schema != SCHEMA {
            return Err(IntentError::Schema {
                path: name.to_owned(),
                found: intent.schema,
            });
        }
        Ok(intent)
    }
}

/// The parse error of `text`, with the field path and the switch it belongs to.
fn located_error(text: &str, name: &str, limits: &Limits) -> IntentError {
    let mut field = None;
    let parsed =
        serde_saphyr::with_deserializer_from_str_with_options(text, options(limits), |de| {
            serde_path_to_error::deserialize::<_, Intent>(de).map_err(|e| {
                let path = e.path().to_string();
                if path != "." && !path.is_empty() {
                    field = Some(path);
                }
                e.into_inner()
            })
        });
    let (message, duplicate) = match parsed {
        Err(e) => (explain(&e, limits), duplicate_key(&e.to_string())),
        Ok(_) => (
            "the document parses only with field tracking (a parser inconsistency)".into(),
            None,
        ),
    };
    // A duplicate key is reported at the mapping that holds it; serde_path_to_error names the
    // key it could not place `?`: name it from the parser's message instead.
    if let Some(f) = field.take() {
        let parent = f
            .strip_suffix(".?")
            .or_else(|| (f == "?").then_some(""))
            .map(str::to_owned);
        field = match (parent, duplicate) {
            (Some(p), Some(key)) if p.is_empty() => Some(key),
            (Some(p), Some(key)) => Some(format!("{p}.{key}")),
            (Some(p), None) if !p.is_empty() => Some(p),
            (Some(_), None) => None,
            (None, _) => Some(f),
        };
    }
    let field = field.map(|f| super::validate::bounded(f, 4 * super::MAX_ECHO_BYTES));
    let switch = field
        .as_deref()
        .and_then(|f| switch_of_field(text, f, limits))
        .map(|s| super::validate::bounded(s, super::MAX_ECHO_BYTES));
    IntentError::Yaml {
        path: name.to_owned(),
        field,
        switch,
        message,
    }
}

/// The parser's error in words: which limit was hit and what it protects against, or its own
/// message cut to a readable length (it may quote a huge scalar).
fn explain(e: &serde_saphyr::Error, limits: &Limits) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    let at = e
        .location()
        .map(|l| format!("line {} column {}: ", l.line(), l.column()))
        .unwrap_or_default();
    let limit = match e.without_snippet() {
        serde_saphyr::Error::Budget { breach, .. } => match breach {
            B::AliasAnchorRatio { aliases, anchors } => Some(format!(
                "{aliases} aliases of {anchors} anchor(s), more than 10 per anchor: {FLOOD}"
            )),
            B::Aliases { aliases } => Some(format!(
                "{aliases} aliases, more than the {} allowed: {FLOOD}",
                limits.max_anchors * 10
            )),
            B::Anchors { anchors } => Some(format!(
                "{anchors} anchors: more than the {} allowed",
                limits.max_anchors
            )),
            B::Depth { depth } => Some(format!(
                "nested {depth} deep: more than the {} levels an intent needs",
                limits.max_depth
            )),
            B::Nodes { nodes } => Some(format!(
                "{nodes} YAML nodes: more than the {} allowed",
                limits.max_nodes
            )),
            B::Events { events } => Some(format!(
                "{events} YAML events: more than the {} allowed",
                limits.max_nodes * 2
            )),
            B::Documents { documents } => Some(format!(
                "{documents} YAML documents: an intent is one document"
            )),
            B::InputBytes { .. } | B::ScalarBytes { .. } => Some(format!(
                "larger than the {}-byte limit for an intent",
                limits.max_bytes
            )),
            other => Some(format!("a parser limit was hit ({other:?})")),
        },
        _ => None,
    };
    let text = e.to_string();
    if let (None, Some(key)) = (&limit, duplicate_key(&text)) {
        return format!("{at}the key {key} appears twice; each key may appear once");
    }
    match limit {
        Some(words) => format!("{at}too big to read: {words}"),
        None => super::validate::bounded(
            text.trim_start_matches("error: ").to_owned(),
            16 * super::MAX_ECHO_BYTES,
        ),
    }
}

const FLOOD: &str = "an alias flood (\"billion laughs\") expands a small file into an enormous \
                     document";

/// The key a duplicate-key message names (`duplicate mapping key `name` ...`).
fn duplicate_key(message: &str) -> Option<String> {
    let rest = &message[message.find("duplicate mapping key")? + "duplicate mapping key".len()..];
    let rest = rest.trim_start_matches(':').trim_start();
    let key = match rest.strip_prefix('`') {
        Some(r) => r.split('`').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    (!key.is_empty()).then(|| super::validate::bounded(key.to_owned(), super::MAX_ECHO_BYTES))
}

fn options(limits: &Limits) -> Options {
    // Both types are non-exhaustive: start from the defaults and tighten.
    let mut budget = Budget::default();
    budget.max_reader_input_bytes = usize::try_from(limits.max_bytes).ok();
    budget.max_depth = limits.max_depth;
    budget.max_nodes = limits.max_nodes;
    // Every node is at most two events (start and end); document markers add a few more.
    budget.max_events = limits.max_nodes.saturating_mul(2).saturating_add(1024);
    budget.max_anchors = limits.max_anchors;
    budget.max_aliases = limits.max_anchors.saturating_mul(10);
    budget.max_documents = 1;
    budget.flow_nesting_limit = limits.max_depth;
    let mut options = Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = DuplicateKeyPolicy::Error;
    options
}

/// Names the switch a field path like `switches[3].ports.Ethernet0` points into, by a second,
/// lenient parse that only reads the switch names. Best effort: `None` when that fails too.
fn switch_of_field(text: &str, field: &str, limits: &Limits) -> Option<String> {
    let rest = field.strip_prefix("switches[")?;
    let index: usize = rest.split(']').next()?.parse().ok()?;
    #[derive(Deserialize)]
    struct Names {
        #[serde(default)]
        switches: Vec<NameOnly>,
    }
    #[derive(Deserialize)]
    struct NameOnly {
        #[serde(default)]
        name: Option<String>,
    }
    // Lenient about duplicates: the error being explained may be one.
    let mut lenient = options(limits);
    lenient.duplicate_keys = DuplicateKeyPolicy::FirstWins;
    let names: Names = serde_saphyr::from_str_with_options(text, lenient).ok()?;
    names.switches.into_iter().nth(index)?.name
}
