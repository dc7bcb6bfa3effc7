//! The harness itself: namespaces are private, commands run inside them, cleanup is complete.

use spinel_netns_tests::{Sandbox, require_root};

#[test]
fn namespaces_are_isolated_and_removed_on_drop() {
    require_root();
    let dir;
    {
        let sb = Sandbox::new("namespaces_are_isolated");
        sb.netns("a");
        sb.netns("b");
        sb.run_in(
            "a",
            "ip",
            &["link", "add", "x0", "type", "veth", "peer", "name", "x1"],
        );
        let in_a = sb.run_in("a", "ip", &["-br", "link"]);
        let in_b = sb.run_in("b", "ip", &["-br", "link"]);
        assert!(in_a.contains("x0@x1"), "{in_a}");
        assert!(
            !in_b.contains("x0"),
            "namespace b must not see a's links: {in_b}"
        );
        dir = sb.dir().to_owned();
        assert!(dir.join("ns/a").exists());
    }
    assert!(!dir.exists(), "sandbox directory must be removed on drop");
}

#[test]
fn leftovers_of_a_dead_run_are_swept() {
    // Before anything is written under /run: without root this must fail on root, not on EACCES.
    require_root();
    // Fake a sandbox whose owner died: no live process has this pid and start time. Built
    // under a staging name (which sweeps skip) so a parallel test cannot sweep it half-made.
    let root = std::path::Path::new(spinel_netns_tests::sandbox::SANDBOX_ROOT);
    let staging = root.join(format!(".staging.stale.{}", std::process::id()));
    let stale = root.join(format!("stale.{}.0", std::process::id()));
    std::fs::create_dir_all(staging.join("ns")).unwrap();
    std::fs::write(staging.join("owner"), "999999999 1").unwrap();
    hostnet::netns::NetNs::create_at(staging.join("ns/leak")).unwrap();
    std::fs::rename(&staging, &stale).unwrap();
    let _sb = Sandbox::new("leftovers_are_swept");
    assert!(
        !stale.exists(),
        "a sandbox whose owner is dead must be swept"
    );
}

/// A process the test recorded (an LLDP sender, an agent) and a process it did not but that
/// lives in one of the sandbox's namespaces (a helper one of them started) both end with the
/// sandbox: nothing keeps a namespace alive or keeps sending after the test.
#[test]
fn processes_end_with_their_sandbox() {
    require_root();
    let (recorded, helper);
    {
        let sb = Sandbox::new("processes_end_with_their_sandbox");
        sb.netns("leaf");
        let child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        recorded = child.id();
        sb.record_pid(recorded);
        // Not recorded, started inside the namespace and detached from us.
        let out = sb.run_in("leaf", "sh", &["-c", "sleep 600 >/dev/null 2>&1 & echo $!"]);
        helper = out.trim().parse::<u32>().unwrap();
        assert!(std::path::Path::new(&format!("/proc/{helper}")).exists());
        std::mem::forget(child); // as a harness that forgot to kill it
    }
    for pid in [recorded, helper] {
        let gone = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
            .unwrap_or(true);
        assert!(gone, "process {pid} outlived its sandbox");
    }
}
