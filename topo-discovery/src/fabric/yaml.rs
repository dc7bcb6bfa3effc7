//! A small YAML emitter for the Kubernetes objects we print (block style, like `kubectl`).
//!
//! Strings are written plain only when YAML 1.1 and 1.2 both read them back as the same string
//! (letters first, no spaces, not `yes`/`no`/`null`-like); everything else is double-quoted with
//! JSON escapes, which YAML accepts. serde_yaml is unmaintained, and these objects need no more.

use serde_json::Value;

/// Renders one document (no leading `---`).
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => emit_map(map, 0, &mut out),
        Value::Array(items) if !items.is_empty() => emit_seq(items, 0, &mut out),
        scalar => {
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
    out
}

/// Renders several documents separated by `---`.
pub fn documents(values: &[Value]) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&to_string(v));
    }
    out
}

fn emit_map(map: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    for (key, value) in map {
        out.push_str(&" ".repeat(indent));
        out.push_str(&string_text(key));
        out.push(':');
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                emit_map(m, indent + 2, out);
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                emit_seq(items, indent, out);
            }
            scalar => {
                out.push(' ');
                out.push_str(&scalar_text(scalar));
                out.push('\n');
            }
        }
    }
}

fn emit_seq(items: &[Value], indent: usize, out: &mut String) {
    for item in items {
        match item {
            Value::Object(m) if !m.is_empty() => {
                // Render the map two columns in, then put the dash where its first key starts.
                let mut block = String::new();
                emit_map(m, indent + 2, &mut block);
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                out.push_str(&block[indent + 2..]);
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push_str(&" ".repeat(indent));
                out.push_str("-\n");
                emit_seq(inner, indent + 2, out);
            }
            scalar => {
                out.push_str(&" ".repeat(indent));
                out.push_str("- ");
                out.push_str(&scalar_text(scalar));
                out.push('\n');
            }
        }
    }
}

fn scalar_text(value: &Value) -> String {
    match value {
        Value::Null => String::from("null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string_text(s),
        Value::Array(_) => String::from("[]"),
        Value::Object(_) => String::from("{}"),
    }
}

fn string_text(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_owned()
    } else {
        serde_json::Value::String(s.to_owned()).to_string()
    }
}

fn is_plain_safe(s: &str) -> bool {
    const RESERVED: [&str; 15] = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf", "none", "tilde",
        "~", "<<",
    ];
    let Some(first) = s.chars().next() else {
        return false;
    };
    first.is_ascii_alphabetic()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/'))
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kubernetes_objects_render_in_block_style() {
        let v = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "h1", "labels": {"fabric.spinel.dev/rails": "2", "a/b": "yes"}},
            "spec": {"members": [{"type": "Node", "selector": {"exactMatch": {"name": "h1"}}}], "tier": 1, "empty": []}
        });
        let expected = "\
apiVersion: v1
kind: Node
metadata:
  labels:
    a/b: \"yes\"
    fabric.spinel.dev/rails: \"2\"
  name: h1
spec:
  empty: []
  members:
  - selector:
      exactMatch:
        name: h1
    type: Node
  tier: 1
";
        assert_eq!(to_string(&v), expected);
    }

    #[test]
    fn ambiguous_strings_are_quoted() {
        for s in [
            "", "true", "No", "1", "1.5", "-x", "a b", "a: b", "#x", "null", "~",
        ] {
            assert!(string_text(s).starts_with('"'), "{s}");
        }
        for s in [
            "leaf1",
            "spine1-2.leaf1-2",
            "fabric.spinel.dev/tier-1",
            "Node",
        ] {
            assert_eq!(string_text(s), s);
        }
    }

    #[test]
    fn documents_are_separated() {
        assert_eq!(
            documents(&[json!({"a": "b"}), json!({"c": "d"})]),
            "a: b\n---\nc: d\n"
        );
    }
}
