//! hostnet's DCB netlink against this machine's kernel and iproute2: the requests equal what
//! `dcb` sends here and now (not only in the stored fixtures), and the kernel's answers map to
//! the right errors. A veth has no DCB operations, so the kernel parses each request (attribute
//! policy, command, IFNAME lookup) and then answers EOPNOTSUPP; a malformed request would get
//! EINVAL and a wrong name ENODEV, so EOPNOTSUPP proves the request well formed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;

use hostnet::dcb::{DCBX_HOST, DCBX_VER_IEEE, DcbApp, DcbError, DcbMessage, DcbSocket};
use hostnet::netlink::Socket;
use hostnet::netns::NetNs;
use netlink_packet_core::NLM_F_ACK;
use spinel_netns_tests::{Sandbox, require_root, require_tool};

/// Every netlink message `dcb ARGS` sends in `ns`, from strace's hex dumps of sendto.
fn dcb_requests(sb: &Sandbox, ns: &str, args: &[&str]) -> Vec<Vec<u8>> {
    require_tool("strace", "strace");
    require_tool("dcb", "iproute2");
    let out = sb
        .command_in(ns, "strace")
        .args([
            "-qq",
            "-e",
            "trace=sendto",
            "-e",
            "write=all",
            "-o",
            "/dev/stdout",
            "dcb",
        ])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut messages: Vec<Vec<u8>> = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.starts_with("sendto(") {
            messages.push(Vec::new());
        } else if let (Some(m), Some(rest)) = (messages.last_mut(), line.strip_prefix(" | "))
            && rest.len() > 7
        {
            let hex: String = rest[7..].chars().take(49).collect();
            m.extend(
                hex.split_whitespace()
                    .map(|b| u8::from_str_radix(b, 16).unwrap()),
            );
        }
    }
    assert!(
        !messages.is_empty(),
        "dcb {args:?} sent nothing: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    messages
}

fn ours(message: DcbMessage, theirs: &[u8]) -> Vec<u8> {
    let seq = u32::from_ne_bytes(theirs[8..12].try_into().unwrap());
    Socket::<DcbMessage>::encode(message, NLM_F_ACK, seq)
}

fn lab(test: &str) -> Sandbox {
    require_root();
    let sb = Sandbox::new(test);
    sb.netns("host");
    sb.run_in(
        "host",
        "ip",
        &[
            "link", "add", "ens1f0", "type", "veth", "peer", "name", "ens1f1",
        ],
    );
    sb
}

#[test]
fn requests_equal_what_dcb_sends_here() {
    let sb = lab("switch_dcb_requests");
    let cases: Vec<(Vec<&str>, DcbMessage)> = vec![
        (
            vec!["ets", "show", "dev", "ens1f0"],
            DcbMessage::ieee_get("ens1f0"),
        ),
        (
            vec!["pfc", "show", "dev", "ens1f0"],
            DcbMessage::ieee_get("ens1f0"),
        ),
        (
            vec!["app", "add", "dev", "ens1f0", "dscp-prio", "26:3", "48:6"],
            DcbMessage::ieee_set_app("ens1f0", vec![DcbApp::dscp(26, 3), DcbApp::dscp(48, 6)]),
        ),
        (
            vec!["app", "del", "dev", "ens1f0", "dscp-prio", "26:3"],
            DcbMessage::ieee_del_app("ens1f0", vec![DcbApp::dscp(26, 3)]),
        ),
        (
            vec!["dcbx", "set", "dev", "ens1f0", "host", "ieee"],
            DcbMessage::set_dcbx("ens1f0", DCBX_HOST | DCBX_VER_IEEE),
        ),
    ];
    for (args, message) in cases {
        let theirs = dcb_requests(&sb, "host", &args);
        assert_eq!(theirs.len(), 1, "dcb {args:?}");
        assert_eq!(ours(message, &theirs[0]), theirs[0], "dcb {args:?}");
    }
}

#[test]
fn a_veth_has_no_dcb_operations_and_every_request_says_so() {
    let sb = lab("switch_dcb_kernel");
    let ns = NetNs::open(sb.netns_path("host")).unwrap();
    let mut dcb = DcbSocket::open_in(&ns).unwrap();
    let not_supported = |r: Result<(), DcbError>, what: &str| {
        let e = r.unwrap_err();
        assert!(e.is_not_supported(), "{what}: {e}");
        assert!(
            e.to_string()
                .contains("ens1f0 has no DCB netlink operations"),
            "{what}: {e}"
        );
    };
    not_supported(dcb.ieee("ens1f0").map(drop), "IEEE_GET");
    not_supported(
        dcb.app_add("ens1f0", &[DcbApp::dscp(26, 3)]),
        "IEEE_SET app",
    );
    not_supported(
        dcb.app_del("ens1f0", &[DcbApp::dscp(26, 3)]),
        "IEEE_DEL app",
    );
    not_supported(dcb.set_dcbx("ens1f0", DCBX_HOST | DCBX_VER_IEEE), "SDCBX");
    not_supported(dcb.set_pfc("ens1f0", &[3]), "pfc set (its read)");
    not_supported(dcb.state("ens1f0").map(drop), "GSTATE");
    not_supported(dcb.dcbx("ens1f0").map(drop), "GDCBX");
    not_supported(dcb.set_ets("ens1f0", Default::default()), "IEEE_SET ets");
    let e = dcb.ieee("nosuch0").unwrap_err();
    assert!(matches!(e, DcbError::NoSuchDevice { .. }), "{e}");
    // The same socket keeps working after refusals (sequence numbers stay in step).
    assert!(dcb.ieee("ens1f1").unwrap_err().is_not_supported());
}
