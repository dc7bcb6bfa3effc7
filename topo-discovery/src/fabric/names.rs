//! Names and ids: natural ordering, label-safe segments, path-qualified domain ids and the hash
//! fallback that keeps every id a valid Kubernetes label value and DNS-1123 subdomain.
//!
//! The rules are documented for operators in `docs/fabric-model.md`; keep the two in step.

use std::cmp::Ordering;

/// Longest Kubernetes label value, and therefore the longest domain or switch id.
pub const MAX_ID_LEN: usize = 63;

/// Length of the hex FNV-1a 64 digest used by the fallbacks.
const HASH_HEX_LEN: usize = 16;

/// FNV-1a, 64 bit: tiny, stable across platforms and releases (unlike `std`'s hasher), and the
/// hash Topograph uses for over-long label values.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(PRIME))
}

/// Compares names the way people number switches and hosts: digit runs by value, so `leaf2`
/// sorts before `leaf10`. Ties fall back to plain byte order, so the order is total.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(cx), Some(cy)) if cx.is_ascii_digit() && cy.is_ascii_digit() => {
                let (dx, rx) = split_digits(x);
                let (dy, ry) = split_digits(y);
                let (tx, ty) = (trim_zeros(dx), trim_zeros(dy));
                let ord = tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty));
                if ord != Ordering::Equal {
                    return ord;
                }
                x = rx;
                y = ry;
            }
            (Some(cx), Some(cy)) => {
                if cx != cy {
                    return cx.cmp(cy);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    s.split_at(n)
}

fn trim_zeros(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&c| c == b'0').count();
    &s[n..]
}

/// Turns a switch or domain name into one id segment: lowercase ASCII letters, digits and
/// single `-`, starting and ending with a letter or digit, at most [`MAX_ID_LEN`] characters.
///
/// Dots become `-` because `.` separates path segments in qualified ids. A name with nothing
/// usable left becomes `x` followed by the hash of the original bytes, so it stays distinct.
pub fn sanitize_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        return format!("x{:016x}", fnv1a64(name.as_bytes()));
    }
    if trimmed.len() <= MAX_ID_LEN {
        return trimmed.to_owned();
    }
    with_hash_suffix(trimmed, fnv1a64(name.as_bytes()))
}

/// Keeps as much of `readable` as fits and appends `-<16 hex digits>`: the fallback for ids that
/// would exceed [`MAX_ID_LEN`]. The readable part keeps ids recognisable in `kubectl` output.
fn with_hash_suffix(readable: &str, hash: u64) -> String {
    let room = MAX_ID_LEN - HASH_HEX_LEN - 1;
    let cut = readable.len().min(room);
    // ids are ASCII by construction, so byte slicing is safe
    let head = readable[..cut].trim_end_matches(['-', '.']);
    if head.is_empty() {
        format!("x{hash:016x}")
    } else {
        format!("{head}-{hash:016x}")
    }
}

/// Name of a domain made of several switches at one tier: the first and last member in natural
/// order, the last shortened to what differs (`leaf01` + `leaf02` gives `leaf01-02`,
/// `su1-leaf-r0` .. `su1-leaf-r7` gives `su1-leaf-r0-7`). Members must be sanitised segments.
pub fn group_name(members: &[&str]) -> String {
    let mut sorted: Vec<&str> = members.to_vec();
    sorted.sort_by(|a, b| natural_cmp(a, b));
    sorted.dedup();
    let (Some(first), Some(last)) = (sorted.first(), sorted.last()) else {
        return String::from("empty");
    };
    if first == last {
        return (*first).to_owned();
    }
    let (fb, lb) = (first.as_bytes(), last.as_bytes());
    let mut common = fb.iter().zip(lb).take_while(|(a, b)| a == b).count();
    // Never split a number: `leaf09`/`leaf10` share `leaf`, not `leaf0`.
    while common > 0 && fb[common - 1].is_ascii_digit() {
        common -= 1;
    }
    let suffix = &last[common..];
    let name = if suffix.is_empty() {
        format!("{first}-{last}")
    } else {
        format!("{first}-{suffix}")
    };
    sanitize_segment(&name)
}

/// The id of a domain or switch below `parent`: `<parent>.<segment>`, or `segment` at the top.
///
/// When the qualified id is longer than [`MAX_ID_LEN`], it becomes
/// `<segment, cut to fit>-<FNV-1a 64 of the full qualified id, 16 hex digits>`: still unique
/// (the hash covers the whole path) and still recognisable by its last segment.
pub fn qualify(parent: Option<&str>, segment: &str) -> String {
    let full = match parent {
        Some(p) => format!("{p}.{segment}"),
        None => segment.to_owned(),
    };
    if full.len() <= MAX_ID_LEN {
        full
    } else {
        with_hash_suffix(segment, fnv1a64(full.as_bytes()))
    }
}

/// Makes `id` distinct from ids already taken by appending `-<8 hex digits>` of `salt` (the
/// chassis IDs of the members), cutting the readable part so the result still fits.
pub fn disambiguate(id: &str, salt: &str) -> String {
    let tag = format!("{:08x}", fnv1a64(salt.as_bytes()) as u32);
    let room = MAX_ID_LEN - tag.len() - 1;
    let head = id[..id.len().min(room)].trim_end_matches(['-', '.']);
    format!("{head}-{tag}")
}

/// True when `value` is a valid Kubernetes label value that is also a DNS-1123 subdomain (the
/// rule for HyperNode names): every id this module produces passes.
pub fn is_valid_id(value: &str) -> bool {
    if value.is_empty() || value.len() > MAX_ID_LEN {
        return false;
    }
    value.split('.').all(|seg| {
        let b = seg.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_compares_numbers_by_value() {
        let mut v = vec!["leaf10", "leaf2", "leaf1", "leaf02", "spine1", "leaf"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["leaf", "leaf1", "leaf02", "leaf2", "leaf10", "spine1"]);
        assert_eq!(natural_cmp("a", "a"), Ordering::Equal);
        assert_ne!(
            natural_cmp("leaf02", "leaf2"),
            Ordering::Equal,
            "order must be total"
        );
    }

    #[test]
    fn fnv1a64_matches_the_published_test_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn segments_are_label_safe() {
        assert_eq!(sanitize_segment("Leaf01"), "leaf01");
        assert_eq!(
            sanitize_segment("leaf01.dc1.example.com"),
            "leaf01-dc1-example-com"
        );
        assert_eq!(sanitize_segment("--Eth1/1__x--"), "eth1-1-x");
        let odd = sanitize_segment("...");
        assert!(odd.starts_with('x') && odd.len() == 17, "{odd}");
        let long = sanitize_segment(&"a".repeat(100));
        assert_eq!(long.len(), MAX_ID_LEN);
        assert!(is_valid_id(&long), "{long}");
    }

    #[test]
    fn group_names_show_first_and_last_member() {
        assert_eq!(group_name(&["leaf02", "leaf01"]), "leaf01-02");
        assert_eq!(group_name(&["spine1", "spine2", "spine3"]), "spine1-3");
        assert_eq!(group_name(&["leaf9", "leaf10"]), "leaf9-10");
        assert_eq!(
            group_name(&["su1-leaf-r0", "su1-leaf-r7", "su1-leaf-r3"]),
            "su1-leaf-r0-7"
        );
        assert_eq!(group_name(&["alpha", "beta"]), "alpha-beta");
        assert_eq!(group_name(&["leaf1"]), "leaf1");
    }

    #[test]
    fn qualified_ids_fall_back_to_a_hash_beyond_63_characters() {
        assert_eq!(qualify(Some("spine1-2"), "leaf1-2"), "spine1-2.leaf1-2");
        assert_eq!(qualify(None, "spine1-2"), "spine1-2");
        let parent = "p".repeat(40);
        let id = qualify(Some(&parent), "leaf-group-with-a-long-name");
        assert!(id.len() <= MAX_ID_LEN, "{id}");
        assert!(id.starts_with("leaf-group-with-a-long-name-"), "{id}");
        assert!(is_valid_id(&id), "{id}");
        // The hash covers the path: the same leaf name under another parent gives another id.
        let other = qualify(Some(&"q".repeat(40)), "leaf-group-with-a-long-name");
        assert_ne!(id, other);
        // And it is stable.
        assert_eq!(id, qualify(Some(&parent), "leaf-group-with-a-long-name"));
    }

    #[test]
    fn disambiguated_ids_stay_valid_and_differ() {
        let a = disambiguate("leaf1", "mac:aa");
        let b = disambiguate("leaf1", "mac:bb");
        assert_ne!(a, b);
        assert!(is_valid_id(&a) && is_valid_id(&b));
        let long = disambiguate(&"z".repeat(63), "salt");
        assert_eq!(long.len(), MAX_ID_LEN);
    }

    #[test]
    fn id_validation_rejects_what_kubernetes_rejects() {
        assert!(is_valid_id("spine1-2.leaf1-2"));
        for bad in ["", "Leaf", "a..b", "-a", "a-", "a_b", ".a", &"a".repeat(64)] {
            assert!(!is_valid_id(bad), "{bad}");
        }
    }
}
