//! What iproute2 sends: netlink requests captured with strace, for byte-for-byte comparisons.

use std::process::Stdio;

use crate::sandbox::Sandbox;

/// Decodes lowercase hex.
pub fn from_hex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Runs `ip <args>` in namespace `ns` under strace and returns every netlink message it sent
/// with sendmsg, in order. The command's own success does not matter: a kernel without the
/// feature rejects the request, but the request is what is compared.
fn requests(sb: &Sandbox, ns: &str, args: &[&str]) -> Vec<Vec<u8>> {
    crate::require_tool("strace", "strace");
    let out = sb
        .command_in(ns, "strace")
        .args([
            "-qq",
            "-e",
            "trace=sendmsg",
            "-e",
            "write=all",
            "-o",
            "/dev/stdout",
            "ip",
        ])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut messages = Vec::new();
    let mut current: Option<Vec<u8>> = None;
    for line in text.lines() {
        if line.starts_with("sendmsg(") {
            messages.extend(current.take());
            current = Some(Vec::new());
            continue;
        }
        // " | 00000  xx xx xx xx xx xx xx xx  xx xx xx xx xx xx xx xx  ascii |"
        if let (Some(bytes), Some(rest)) = (current.as_mut(), line.strip_prefix(" | "))
            && rest.len() > 7
        {
            let hex: String = rest[7..].chars().take(49).collect();
            bytes.extend(
                hex.split_whitespace()
                    .filter(|b| b.len() == 2)
                    .map(|b| u8::from_str_radix(b, 16).unwrap()),
            );
        }
    }
    messages.extend(current);
    messages
}

/// The one `RTM_NEWLINK` request of `ip link set <args>`.
pub fn link_set_request(sb: &Sandbox, ns: &str, args: &[&str]) -> Vec<u8> {
    let mut full = vec!["link", "set"];
    full.extend_from_slice(args);
    let newlink: Vec<Vec<u8>> = requests(sb, ns, &full)
        .into_iter()
        .filter(|m| m.len() >= 16 && m[4] == 16 && m[5] == 0)
        .collect();
    assert_eq!(
        newlink.len(),
        1,
        "ip {}: expected one RTM_NEWLINK",
        full.join(" ")
    );
    newlink.into_iter().next().unwrap()
}

/// `bytes` with the netlink sequence number (bytes 8..12) zeroed, for comparisons.
pub fn without_sequence(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 12 {
        bytes[8..12].fill(0);
    }
    bytes
}
