//! A small block-style YAML writer for configuration trees (maps of maps and scalars), fast
//! enough for thousands of switches and exact about quoting: anything YAML 1.1 or 1.2 could read
//! as another type (`on`, `no`, `3`, `10.0.0.1`, `~`) is double-quoted, so NVUE reads strings
//! as strings.

use std::collections::BTreeMap;

/// A configuration tree borrowing its keys and values: a mapping, a scalar (with whether it is
/// a number), or an empty mapping (a collection member).
#[derive(Default)]
pub struct Node<'a> {
    children: BTreeMap<&'a str, Node<'a>>,
    scalar: Option<(&'a str, bool)>,
}

impl<'a> Node<'a> {
    /// Sets the leaf at `path` to `value` (`None`: a member, `{}`); a member never replaces
    /// what is below it.
    pub fn insert(&mut self, path: &'a [String], value: Option<(&'a str, bool)>) {
        let mut node = self;
        for seg in path {
            node = node.children.entry(seg.as_str()).or_default();
        }
        if value.is_some() {
            node.children.clear();
            node.scalar = value;
        }
    }

    /// Writes the mapping below this node indented by `indent` spaces.
    pub fn write(&self, out: &mut String, indent: usize) {
        const SPACES: &str = "                                                                ";
        for (k, v) in &self.children {
            match SPACES.get(..indent) {
                Some(pad) => out.push_str(pad),
                None => out.extend(std::iter::repeat_n(' ', indent)),
            }
            scalar(out, k);
            out.push(':');
            match (v.scalar, v.children.is_empty()) {
                (Some((s, true)), _) => {
                    out.push(' ');
                    out.push_str(s);
                    out.push('\n');
                }
                (Some((s, false)), _) => {
                    out.push(' ');
                    scalar(out, s);
                    out.push('\n');
                }
                (None, true) => out.push_str(" {}\n"),
                (None, false) => {
                    out.push('\n');
                    v.write(out, indent + 2);
                }
            }
        }
    }
}

const KEYWORDS: [&str; 16] = [
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "Y", "N", "Yes", "No", "On",
    "Off",
];

/// A string, plain when it cannot be read as anything else, else double-quoted.
fn scalar(out: &mut String, s: &str) {
    // Keywords are at most five bytes long: longer words skip the keyword tests.
    let keyword = s.len() <= 5
        && (KEYWORDS.contains(&s)
            || ["true", "false", "null", "yes", "no", "on", "off"]
                .iter()
                .any(|k| s.eq_ignore_ascii_case(k)));
    let plain = s
        .as_bytes()
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"._/-".contains(&c))
        && !keyword;
    if plain {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::Node;

    #[test]
    fn quotes_what_could_be_read_as_another_type() {
        type Leaf<'a> = Option<(&'a str, bool)>;
        let paths: Vec<(Vec<String>, Leaf)> = vec![
            (vec!["a".into(), "3".into()], None),
            (vec!["a".into(), "on".into()], Some(("on", false))),
            (vec!["a".into(), "ip".into()], Some(("10.0.0.1/24", false))),
            (
                vec!["a".into(), "swp1".into()],
                Some(("node01/eth0", false)),
            ),
            (vec!["a".into(), "n".into()], Some(("5", true))),
            (vec!["a".into(), "q".into()], Some(("x\"y", false))),
        ];
        let mut root = Node::default();
        for (p, v) in &paths {
            root.insert(p, *v);
        }
        let mut out = String::new();
        root.write(&mut out, 0);
        assert_eq!(
            out,
            "a:\n  \"3\": {}\n  ip: \"10.0.0.1/24\"\n  \"n\": 5\n  \"on\": \"on\"\n  q: \"x\\\"y\"\n  swp1: node01/eth0\n"
        );
        let back: serde_json::Value = serde_saphyr::from_str(&out).unwrap();
        assert_eq!(
            back,
            serde_json::json!({"a": {"3": {}, "on": "on", "ip": "10.0.0.1/24", "swp1": "node01/eth0", "n": 5, "q": "x\"y"}})
        );
    }
}
