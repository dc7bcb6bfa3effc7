//! `spinel-demo`: Spinel's main job on an embedded default, for the README's quick start.
//!
//! Builds a namespace-simulated SR-IOV node (a fake-sysfs PF whose VFs are real kernel
//! interfaces), attaches two pods through the real `spinel` binary exactly as Multus would,
//! shows them pinging each other, runs CHECK, deletes them and shows every VF back on the host.
//! Everything lives in private namespaces and is removed on exit.

use std::process::ExitCode;

use serde_json::Value;
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{CniCall, first_ip, with_prev_result};

fn step(text: &str) {
    println!("\n== {text}");
}

fn show(node: &SimNode, ns: &str, args: &[&str]) {
    for line in node.sb.run_in(ns, "ip", args).lines() {
        println!("   {line}");
    }
}

fn main() -> ExitCode {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("spinel-demo: run as root (it creates network namespaces)");
        return ExitCode::FAILURE;
    }
    step("A simulated SR-IOV node: PF pf0 (0000:3b:00.0) with 4 VFs, uplinked to a leaf switch");
    let node = SimNode::new("demo", 4);
    show(&node, "node", &["-br", "link"]);
    let before = node.links("node");

    let mut pods: Vec<(String, CniCall, Value)> = Vec::new();
    for (i, pod) in ["trainer-0", "trainer-1"].into_iter().enumerate() {
        let vf = &node.vfs[i];
        step(&format!(
            "ADD {pod}: the device plugin picked VF {} ({}); Multus runs spinel",
            vf.pci, vf.name
        ));
        let netns = node.pod(pod);
        let call = CniCall::new("ADD", pod, Some(&netns), "net1");
        let conf = node.conf("1.1.0", Some(vf));
        let out = node.spinel(&call, &conf);
        if !out.ok() {
            eprintln!("ADD failed: {}\n{}", out.stdout, out.stderr);
            return ExitCode::FAILURE;
        }
        println!("   result: {}", out.json);
        show(&node, pod, &["-br", "addr", "show", "dev", "net1"]);
        pods.push((pod.to_owned(), call, with_prev_result(&conf, &out.json)));
    }

    step(&format!("{} pings {} over the VFs", pods[0].0, pods[1].0));
    let ping = node.sb.output_in(
        &pods[0].0,
        "ping",
        &[
            "-c",
            "3",
            "-i",
            "0.2",
            "-W",
            "2",
            &first_ip(&pods[1].2["prevResult"]),
        ],
    );
    print!("{}", String::from_utf8_lossy(&ping.stdout));
    if !ping.status.success() {
        eprintln!("ping failed");
        return ExitCode::FAILURE;
    }

    // A failed CHECK or DEL fails the demo, but DEL still runs and the host is still shown.
    let mut failed = Vec::new();
    step("CHECK both attachments");
    for (pod, call, conf) in &pods {
        let out = node.spinel(&call.with_command("CHECK"), conf);
        if out.ok() {
            println!("   {pod}: ok");
        } else {
            println!("   {pod}: {}", out.stdout);
            failed.push(format!("CHECK of {pod}"));
        }
    }

    step("DEL both pods");
    for (pod, call, conf) in &pods {
        let out = node.spinel(&call.with_command("DEL"), conf);
        if out.ok() {
            println!("   {pod}: deleted");
        } else {
            println!("   {pod}: {}", out.stdout);
            failed.push(format!("DEL of {pod}"));
        }
    }

    step("Every VF is back on the host, with its original name, MAC and MTU");
    show(&node, "node", &["-br", "link"]);
    let home = node.links("node") == before
        && node.journal_entries().is_empty()
        && node.leased_ips().is_empty();
    if !home {
        failed.push("the host differs from before".to_owned());
    }
    if failed.is_empty() {
        println!("\ndemo ok: nothing leaked");
        ExitCode::SUCCESS
    } else {
        println!("\ndemo FAILED: {}", failed.join("; "));
        ExitCode::FAILURE
    }
}
