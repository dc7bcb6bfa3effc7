//! Malformed and hostile input: each case gets the right CNI error code, and nothing on the
//! node, in the pod, in the journal or in IPAM's store changes.

use serde_json::{Value, json};
use spinel_netns_tests::SimNode;
use spinel_netns_tests::cni::{self, CniCall};

/// One hostile invocation.
struct Case {
    name: &'static str,
    /// Environment overrides: `None` removes the variable.
    env: Vec<(&'static str, Option<String>)>,
    stdin: Vec<u8>,
    code: u64,
}

fn conf_with(base: &Value, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut c = base.clone();
    edit(&mut c);
    c.to_string().into_bytes()
}

#[test]
fn hostile_inputs_get_the_right_code_and_change_nothing() {
    let node = SimNode::new("hostile", 2);
    let netns = node.pod("p");
    let base = node.conf("1.1.0", Some(&node.vfs[0]));
    let call = CniCall::new("ADD", "victim", Some(&netns), "net1");
    // A full cycle first, so directories and caches that legitimately appear on first use exist.
    node.spinel(&call, &base).expect_ok("warm-up ADD");
    node.spinel(&call.with_command("DEL"), &base)
        .expect_ok("warm-up DEL");

    let good = base.to_string().into_bytes();
    let env = |k: &'static str, v: &str| (k, Some(v.to_owned()));
    let unset = |k: &'static str| (k, None);
    let not_a_netns = node.sb.dir().join("plain-file");
    std::fs::write(&not_a_netns, b"").unwrap();
    let node_ns = node.sb.netns_path("node");
    let secret = node.sb.dir().join("secret.json");
    std::fs::write(
        &secret,
        r#"{"type":"pci","pci":{"pci-address":"0000:3b:00.3"}}"#,
    )
    .unwrap();
    let mut nested = String::new();
    for _ in 0..5000 {
        nested.push('[');
    }
    let cases = vec![
        // The environment (code 4).
        Case {
            name: "no CNI_COMMAND",
            env: vec![unset("CNI_COMMAND")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "lower-case command",
            env: vec![env("CNI_COMMAND", "add")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "unknown command",
            env: vec![env("CNI_COMMAND", "DELETE")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "no container ID",
            env: vec![unset("CNI_CONTAINERID")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "container ID traversal",
            env: vec![env("CNI_CONTAINERID", "../../etc/passwd")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "container ID starts with dash",
            env: vec![env("CNI_CONTAINERID", "-rf")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "container ID with space",
            env: vec![env("CNI_CONTAINERID", "a b")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "container ID with slash",
            env: vec![env("CNI_CONTAINERID", "abc/def")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "oversized container ID",
            env: vec![("CNI_CONTAINERID", Some("a".repeat(300)))],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "container ID with newline",
            env: vec![env("CNI_CONTAINERID", "abc\ndef")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "no ifname",
            env: vec![unset("CNI_IFNAME")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "ifname traversal",
            env: vec![env("CNI_IFNAME", "../x")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "ifname with slash",
            env: vec![env("CNI_IFNAME", "a/b")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "ifname too long",
            env: vec![env("CNI_IFNAME", "abcdefghijklmnop")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "ifname dot",
            env: vec![env("CNI_IFNAME", ".")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "ifname with colon",
            env: vec![env("CNI_IFNAME", "eth0:1")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "no netns on ADD",
            env: vec![unset("CNI_NETNS")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "relative netns",
            env: vec![env("CNI_NETNS", "run/netns/x")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "netns with ..",
            env: vec![env("CNI_NETNS", "/run/../etc/passwd")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "missing netns",
            env: vec![env("CNI_NETNS", "/run/netns/no-such-pod")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "netns is a plain file",
            env: vec![("CNI_NETNS", Some(not_a_netns.display().to_string()))],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "netns is the plugin's own",
            env: vec![("CNI_NETNS", Some(node_ns.display().to_string()))],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "no CNI_PATH",
            env: vec![unset("CNI_PATH")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "relative CNI_PATH",
            env: vec![env("CNI_PATH", "bin")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "CNI_ARGS without =",
            env: vec![env("CNI_ARGS", "K8S_POD_NAME")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "CNI_ARGS unknown key",
            env: vec![env("CNI_ARGS", "K8S_POD_NAME=a;EVIL=1")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            // A repeated key is what Multus sends (the later value counts); a repeated key is
            // still checked like any other.
            name: "CNI_ARGS repeated key, later value malformed",
            env: vec![env("CNI_ARGS", "K8S_POD_NAME=a;K8S_POD_NAME=b\u{7}")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "CNI_ARGS oversized",
            env: vec![(
                "CNI_ARGS",
                Some(format!("IgnoreUnknown=1;X={}", "y".repeat(9000))),
            )],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "CNI_ARGS control character",
            env: vec![env("CNI_ARGS", "K8S_POD_NAME=a\u{7}b")],
            stdin: good.clone(),
            code: 4,
        },
        Case {
            name: "CNI_ARGS bad MAC",
            env: vec![env("CNI_ARGS", "MAC=nope")],
            stdin: conf_with(&base, |c| {
                c.as_object_mut().unwrap().remove("runtimeConfig");
                c["deviceID"] = json!(node.vfs[0].pci);
            }),
            code: 7,
        },
        // Decoding (code 6).
        Case {
            name: "empty stdin",
            env: vec![],
            stdin: b"".to_vec(),
            code: 6,
        },
        Case {
            name: "not JSON",
            env: vec![],
            stdin: b"cniVersion=1.0.0".to_vec(),
            code: 6,
        },
        Case {
            name: "JSON array",
            env: vec![],
            stdin: b"[1,2]".to_vec(),
            code: 6,
        },
        Case {
            name: "JSON string",
            env: vec![],
            stdin: b"\"spinel\"".to_vec(),
            code: 6,
        },
        Case {
            name: "truncated JSON",
            env: vec![],
            stdin: good[..good.len() / 2].to_vec(),
            code: 6,
        },
        Case {
            name: "deeply nested JSON",
            env: vec![],
            stdin: format!("{{\"cniVersion\":\"1.1.0\",\"dns\":{nested}").into_bytes(),
            code: 6,
        },
        Case {
            name: "undecodable prevResult",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["prevResult"] = json!({"ips": [{"address": "not-an-ip"}]})
            }),
            code: 6,
        },
        // Versions (code 1).
        Case {
            name: "cniVersion 0.2.0",
            env: vec![],
            stdin: conf_with(&base, |c| c["cniVersion"] = json!("0.2.0")),
            code: 1,
        },
        Case {
            name: "cniVersion 2.0.0",
            env: vec![],
            stdin: conf_with(&base, |c| c["cniVersion"] = json!("2.0.0")),
            code: 1,
        },
        Case {
            name: "STATUS with 1.0.0",
            env: vec![env("CNI_COMMAND", "STATUS")],
            stdin: conf_with(&base, |c| c["cniVersion"] = json!("1.0.0")),
            code: 1,
        },
        // The configuration (code 7).
        Case {
            name: "no cniVersion",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c.as_object_mut().unwrap().remove("cniVersion");
            }),
            code: 7,
        },
        Case {
            name: "numeric cniVersion",
            env: vec![],
            stdin: conf_with(&base, |c| c["cniVersion"] = json!(1)),
            code: 7,
        },
        Case {
            name: "wrong type",
            env: vec![],
            stdin: conf_with(&base, |c| c["type"] = json!("sriov")),
            code: 7,
        },
        Case {
            name: "no name",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c.as_object_mut().unwrap().remove("name");
            }),
            code: 7,
        },
        Case {
            name: "name traversal",
            env: vec![],
            stdin: conf_with(&base, |c| c["name"] = json!("../../x")),
            code: 7,
        },
        Case {
            name: "name with NUL",
            env: vec![],
            stdin: conf_with(&base, |c| c["name"] = json!("a\u{0}b")),
            code: 7,
        },
        Case {
            name: "unknown field",
            env: vec![],
            stdin: conf_with(&base, |c| c["vlann"] = json!(100)),
            code: 7,
        },
        Case {
            name: "state dir from netconf",
            env: vec![],
            stdin: conf_with(&base, |c| c["stateDir"] = json!("/tmp/evil")),
            code: 7,
        },
        Case {
            name: "sysfs root from runtimeConfig",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"]["sysfsRoot"] = json!("/tmp/evil")
            }),
            code: 7,
        },
        Case {
            name: "log file from args",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["args"] = json!({"cni": {"logFile": "/etc/shadow"}})
            }),
            code: 7,
        },
        Case {
            name: "deviceID traversal",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"]["deviceID"] = json!("../../../etc")
            }),
            code: 7,
        },
        Case {
            name: "deviceID function 9",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"]["deviceID"] = json!("0000:3b:00.9")
            }),
            code: 7,
        },
        Case {
            name: "deviceID of a missing device",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"]["deviceID"] = json!("0000:3b:1f.7")
            }),
            code: 100,
        },
        Case {
            name: "deviceID of the PF",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"]["deviceID"] = json!("0000:3b:00.0")
            }),
            code: 100,
        },
        Case {
            name: "disagreeing deviceIDs",
            env: vec![],
            stdin: conf_with(&base, |c| c["deviceID"] = json!(node.vfs[1].pci)),
            code: 7,
        },
        Case {
            name: "pfName without vfIndex",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c.as_object_mut().unwrap().remove("runtimeConfig");
                c["pfName"] = json!("pf0");
            }),
            code: 7,
        },
        Case {
            name: "pfName traversal",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c.as_object_mut().unwrap().remove("runtimeConfig");
                c["pfName"] = json!("../..");
                c["vfIndex"] = json!(0);
            }),
            code: 7,
        },
        Case {
            name: "vfIndex beyond numvfs",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c.as_object_mut().unwrap().remove("runtimeConfig");
                c["pfName"] = json!("pf0");
                c["vfIndex"] = json!(99);
            }),
            code: 100,
        },
        Case {
            name: "no VF named",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c.as_object_mut().unwrap().remove("runtimeConfig");
            }),
            code: 7,
        },
        Case {
            name: "mtu out of range",
            env: vec![],
            stdin: conf_with(&base, |c| c["mtu"] = json!(70000)),
            code: 7,
        },
        Case {
            name: "mtu above the PF's",
            env: vec![],
            stdin: conf_with(&base, |c| c["mtu"] = json!(9500)),
            code: 7,
        },
        Case {
            name: "mtu as a string",
            env: vec![],
            stdin: conf_with(&base, |c| c["mtu"] = json!("1500")),
            code: 7,
        },
        Case {
            name: "negative mtu",
            env: vec![],
            stdin: conf_with(&base, |c| c["mtu"] = json!(-1)),
            code: 7,
        },
        Case {
            name: "bad MAC",
            env: vec![],
            stdin: conf_with(&base, |c| c["mac"] = json!("zz:zz:zz:zz:zz:zz")),
            code: 7,
        },
        Case {
            name: "multicast MAC",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"]["mac"] = json!("01:00:5e:00:00:01")
            }),
            code: 7,
        },
        Case {
            name: "IPAM type traversal",
            env: vec![],
            stdin: conf_with(&base, |c| c["ipam"]["type"] = json!("../../bin/sh")),
            code: 7,
        },
        Case {
            name: "IPAM without type",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["ipam"].as_object_mut().unwrap().remove("type");
            }),
            code: 7,
        },
        Case {
            name: "IPAM plugin missing",
            env: vec![],
            stdin: conf_with(&base, |c| c["ipam"]["type"] = json!("no-such-ipam")),
            code: 102,
        },
        Case {
            name: "device-info file outside its directory",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"] = json!({"CNIDeviceInfoFile": secret});
            }),
            code: 7,
        },
        Case {
            name: "device-info file /etc/passwd",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"] = json!({"CNIDeviceInfoFile": "/etc/passwd"});
            }),
            code: 7,
        },
        Case {
            name: "relative device-info file",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["runtimeConfig"] = json!({"CNIDeviceInfoFile": "devinfo.json"});
            }),
            code: 7,
        },
        Case {
            name: "GC with an invalid attachment",
            env: vec![env("CNI_COMMAND", "GC")],
            stdin: conf_with(&base, |c| {
                c["cni.dev/valid-attachments"] = json!([{"containerID": "../x", "ifname": "net1"}])
            }),
            code: 7,
        },
        Case {
            name: "oversized configuration",
            env: vec![],
            stdin: conf_with(&base, |c| {
                c["dns"] = json!({"search": ["x".repeat(1 << 20)]})
            }),
            code: 7,
        },
    ];
    assert!(cases.len() >= 50, "the corpus must hold at least 50 cases");

    run_corpus(&node, &call, cases);
}

/// Runs every case against the warmed-up `node` and checks its code, that it says what is
/// wrong, and that nothing on the node, in the pod, in the journal or in IPAM's store changed.
fn run_corpus(node: &SimNode, call: &CniCall, cases: Vec<Case>) {
    let snapshot = || (node.links("node"), node.links("p"), node.files());
    let before = snapshot();
    for case in cases {
        let mut cmd = node.plugin_command("spinel", call);
        for (key, value) in &case.env {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        let out = cni::run_raw(cmd, &case.stdin);
        let msg = out.expect_code(case.code, case.name).to_owned();
        assert!(
            !msg.is_empty(),
            "{}: the error must say what is wrong",
            case.name
        );
        assert_eq!(snapshot(), before, "{}: the system changed", case.name);
    }
    node.assert_all_home();
}

/// Cases added when hardening the CNI: namespaces of every other kind (refused without
/// blocking, before anything is recorded), names the kernel refuses, malformed chain results,
/// IPAM delegates that cannot be one, and typed fields with values of the wrong kind.
#[test]
fn namespaces_names_results_delegates_and_typed_fields_are_refused_up_front() {
    let node = SimNode::new("hostile2", 2);
    let netns = node.pod("p");
    let base = node.conf("1.1.0", Some(&node.vfs[0]));
    let call = CniCall::new("ADD", "victim", Some(&netns), "net1");
    node.spinel(&call, &base).expect_ok("warm-up ADD");
    node.spinel(&call.with_command("DEL"), &base)
        .expect_ok("warm-up DEL");

    let good = base.to_string().into_bytes();
    let env = |k: &'static str, v: &str| (k, Some(v.to_owned()));
    let dir = node.sb.dir();
    let fifo = dir.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let plain = dir.join("plain");
    std::fs::write(&plain, b"").unwrap();
    let link_to_plain = dir.join("link-to-plain");
    std::os::unix::fs::symlink(&plain, &link_to_plain).unwrap();
    let path_of = |p: &std::path::Path| p.display().to_string();
    let netns_case = |name: &'static str, path: String| Case {
        name,
        env: vec![("CNI_NETNS", Some(path))],
        stdin: good.clone(),
        code: 4,
    };
    let conf_case = |name: &'static str, code: u64, edit: &dyn Fn(&mut Value)| Case {
        name,
        env: vec![],
        stdin: conf_with(&base, edit),
        code,
    };
    let env_case = |name: &'static str, key: &'static str, value: &str| Case {
        name,
        env: vec![env(key, value)],
        stdin: good.clone(),
        code: 4,
    };
    let cases = vec![
        netns_case("netns is a mount namespace", "/proc/1/ns/mnt".into()),
        netns_case("netns is a user namespace", "/proc/1/ns/user".into()),
        netns_case("netns is a pid namespace", "/proc/1/ns/pid".into()),
        netns_case("netns is a uts namespace", "/proc/1/ns/uts".into()),
        netns_case("netns is an ipc namespace", "/proc/1/ns/ipc".into()),
        netns_case("netns is a cgroup namespace", "/proc/1/ns/cgroup".into()),
        netns_case(
            "netns is the plugin's own mount namespace",
            "/proc/self/ns/mnt".into(),
        ),
        netns_case("netns is a FIFO (would block)", path_of(&fifo)),
        netns_case("netns is a character device", "/dev/null".into()),
        netns_case("netns is a directory", path_of(dir)),
        netns_case("netns is a link to a plain file", path_of(&link_to_plain)),
        env_case("ifname all", "CNI_IFNAME", "all"),
        env_case("ifname default", "CNI_IFNAME", "default"),
        env_case("ifname dot dot", "CNI_IFNAME", ".."),
        env_case("ifname with tab", "CNI_IFNAME", "net\t1"),
        env_case("container ID with colon", "CNI_CONTAINERID", "a:b"),
        env_case("container ID dot", "CNI_CONTAINERID", "."),
        env_case("container ID not ASCII", "CNI_CONTAINERID", "caf\u{e9}"),
        env_case("CNI_PATH with ..", "CNI_PATH", "/opt/cni/../bin"),
        env_case("CNI_COMMAND with a space", "CNI_COMMAND", "ADD "),
        conf_case("prevResult array", 6, &|c| c["prevResult"] = json!([])),
        conf_case("prevResult string", 6, &|c| c["prevResult"] = json!("x")),
        conf_case("prevResult number", 6, &|c| c["prevResult"] = json!(1)),
        conf_case("prevResult interfaces not a list", 6, &|c| {
            c["prevResult"] = json!({"interfaces": "x"})
        }),
        conf_case("prevResult bad address", 6, &|c| {
            c["prevResult"] = json!({"cniVersion": "1.1.0", "ips": [{"address": "bad"}]})
        }),
        conf_case("ipam.type spinel (recursion)", 7, &|c| {
            c["ipam"]["type"] = json!("spinel")
        }),
        conf_case("ipam.type empty", 7, &|c| c["ipam"]["type"] = json!("")),
        conf_case("ipam.type dot", 7, &|c| c["ipam"]["type"] = json!(".")),
        conf_case("ipam.type too long", 7, &|c| {
            c["ipam"]["type"] = json!("a".repeat(65))
        }),
        conf_case("ipam.type with space", 7, &|c| {
            c["ipam"]["type"] = json!("host local")
        }),
        conf_case("ipam.type a number", 7, &|c| c["ipam"]["type"] = json!(5)),
        conf_case("ipam a string", 7, &|c| c["ipam"] = json!("host-local")),
        conf_case("vlan as a string", 7, &|c| c["vlan"] = json!("100")),
        conf_case("vlanProto a number", 7, &|c| {
            c["vlan"] = json!(100);
            c["vlanProto"] = json!(1)
        }),
        conf_case("spoofchk a boolean", 7, &|c| c["spoofchk"] = json!(true)),
        conf_case("trust upper case", 7, &|c| c["trust"] = json!("ON")),
        conf_case("linkState capitalised", 7, &|c| {
            c["linkState"] = json!("Auto")
        }),
        conf_case("broadcast MAC", 7, &|c| {
            c["mac"] = json!("ff:ff:ff:ff:ff:ff")
        }),
        conf_case("all-zero MAC", 7, &|c| {
            c["mac"] = json!("00:00:00:00:00:00")
        }),
        conf_case("short MAC", 7, &|c| c["mac"] = json!("02:00:00:00:00")),
        conf_case("runtimeConfig.deviceID malformed", 7, &|c| {
            c["runtimeConfig"] = json!({"deviceID": "3b:00"})
        }),
        conf_case("args.cni.deviceID malformed", 7, &|c| {
            c["args"] = json!({"cni": {"deviceID": "0000:3b:00.2/.."}})
        }),
        conf_case("pciBusID function 8", 7, &|c| {
            c["pciBusID"] = json!("0000:3b:00.8")
        }),
        conf_case("allowNonRdmaMaster in VF mode", 7, &|c| {
            c["allowNonRdmaMaster"] = json!(true)
        }),
        conf_case("routing.table 255", 7, &|c| {
            c["routing"] = json!({"table": 255})
        }),
        conf_case("garp.count 11", 7, &|c| c["garp"] = json!({"count": 11})),
        conf_case("sysctls.arpIgnore 4", 7, &|c| {
            c["sysctls"] = json!({"arpIgnore": 4})
        }),
        conf_case("rdma.netnsMode unknown", 7, &|c| {
            c["rdma"] = json!({"netnsMode": "bogus"})
        }),
        conf_case("mode ipvlan", 7, &|c| c["mode"] = json!("ipvlan")),
        conf_case("negative minTxRate", 7, &|c| c["minTxRate"] = json!(-1)),
    ];
    assert!(
        cases.len() >= 45,
        "the added corpus holds {} cases",
        cases.len()
    );
    run_corpus(&node, &call, cases);
}

/// sriov-cni's `logFile` is accepted so its NADs work unchanged, and never opened: a root
/// plugin does not write where a pod-reachable configuration points.
#[test]
fn a_log_file_named_by_the_network_is_never_written() {
    let node = SimNode::new("hostile_logfile", 1);
    let netns = node.pod("p");
    let target = node.sb.dir().join("cron.d-x");
    let mut conf = node.conf("1.1.0", Some(&node.vfs[0]));
    conf["logFile"] = json!(target);
    conf["logLevel"] = json!("debug");
    let call = CniCall::new("ADD", "logfile", Some(&netns), "net1");
    node.spinel(&call, &conf).expect_ok("ADD with logFile");
    node.spinel(&call.with_command("DEL"), &conf)
        .expect_ok("DEL with logFile");
    assert!(!target.exists(), "{} was written", target.display());
    node.assert_all_home();
}
