//! The real binary: starts on a static node list, turns ready, answers a filter over TCP, and
//! stops cleanly on SIGTERM (what the Kubernetes test tier and a Deployment rely on).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// One HTTP/1.1 request on a fresh connection; the status and body.
fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let status = out.split(' ').nth(1)?.parse().ok()?;
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    Some((status, body))
}

#[test]
fn starts_serves_and_stops_on_sigterm() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_spinel-scheduler"))
        .args(["--listen", &addr, "--nodes-file", &fixture("nodes.json")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while http(&addr, "GET", "/readyz", b"").map(|r| r.0) != Some(200) {
        assert!(Instant::now() < deadline, "not ready in 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let body = std::fs::read(fixture("requests/filter-plain-pod-names.json")).unwrap();
    let (status, reply) = http(&addr, "POST", "/filter", &body).unwrap();
    assert_eq!(status, 200, "{reply}");
    let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
    let asked: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        v["NodeNames"], asked["NodeNames"],
        "a plain pod passes through"
    );
    // With a node file there is no pod watch: a gang pod is never seen, so nothing is decided
    // or held for it.
    let body = std::fs::read(fixture("requests/filter-gang-rank0-names.json")).unwrap();
    let (status, reply) = http(&addr, "POST", "/filter", &body).unwrap();
    assert_eq!(status, 200, "{reply}");
    let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v["NodeNames"], serde_json::json!([]), "{reply}");
    let reason = v["FailedNodes"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert!(
        reason
            .as_str()
            .unwrap()
            .contains("not a pending pod the API server shows"),
        "{reason}"
    );
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "still running 10 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}
