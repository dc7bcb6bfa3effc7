//! Name rules. Names end up in file names, CLI lines and config keys, so they are checked
//! before anything is built from them.

/// A switch or fabric name: a hostname label (letters, digits, `.`, `_`, `-`; starts with a
/// letter or digit; at most 63 characters).
pub(crate) fn valid_switch_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// A host name: a Kubernetes node name (DNS subdomain: lowercase letters, digits, `-` and `.`,
/// alphanumeric at both ends, at most 253).
pub(crate) fn valid_host_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 253
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'-'))
}

/// A Linux interface name: 1-15 bytes, no `/`, no whitespace, not `.` or `..`.
pub(crate) fn valid_nic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 15
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|c| c.is_ascii_graphic() && c != b'/' && c != b':')
}

/// A switch port name (`Ethernet0`, `swp1s2`, `Ethernet1/1`): letters, digits, `/`, `.`, `_`,
/// `-`, starting with a letter, at most 32.
pub(crate) fn valid_port_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && b[0].is_ascii_alphabetic()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'/' | b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_switch_name("leaf01.pod-a"));
        assert!(!valid_switch_name("../etc"));
        assert!(!valid_switch_name(""));
        assert!(valid_host_name("gpu-node-17.example"));
        assert!(!valid_host_name("Node17"));
        assert!(valid_nic_name("ens1f0np0"));
        assert!(!valid_nic_name("a/b"));
        assert!(!valid_nic_name("sixteen-chars-xx"));
        assert!(valid_port_name("Ethernet1/1"));
        assert!(valid_port_name("swp1s0"));
        assert!(!valid_port_name("1swp"));
        assert!(!valid_port_name("swp 1"));
    }
}
