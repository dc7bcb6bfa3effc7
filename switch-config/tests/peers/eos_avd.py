#!/usr/bin/env python3
"""Renders an EOS configuration again through Arista AVD's own templates, and compares.

Each rendered `.eos.cfg` is read into AVD's `eos_cli_config_gen` structured configuration,
validated against AVD's schema (types, enums, ranges) and rendered by AVD's templates (the
`pyavd` package, PyPI). Every block must come back with the same lines: a line AVD would
spell differently, one whose value AVD's schema refuses, or one this reader does not map to
AVD fails. Lines AVD has no model for (`dcbx ...`) are listed as not proven, never passed.

Usage: eos_avd.py FILE...      Exit: 0 all match, 1 a mismatch, 2 usage error.
"""

import re
import sys

import pyavd

# Lines with no AVD model: reported as "not proven by AVD" (EOS manual only).
NOT_IN_AVD = [re.compile(r"^dcbx application udp \d+ priority \d$"), re.compile(r"^dcbx mode ieee$")]


def blocks(text):
    """Top-level blocks: (header, [child lines, with nested children as (line, [..])])."""
    out = []
    stack = []
    for raw in text.splitlines():
        line = raw.rstrip()
        body = line.lstrip()
        if not body or body.startswith("!") or body == "end":
            continue
        indent = len(line) - len(body)
        node = (body, [])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if stack:
            stack[-1][1][1].append(node)
        else:
            out.append(node)
        stack.append((indent, node))
    return out


def norm(node):
    """A block as a comparable value: its line and the sorted set of its children."""
    line, children = node
    return (line, tuple(sorted(norm(c) for c in children)))


class Unmapped(Exception):
    pass


def queue(node, q):
    for line, _ in node[1]:
        w = line.split()
        if line in ("no priority", "priority strict"):
            q["priority"] = line
        elif w[:2] == ["bandwidth", "percent"]:
            q["bandwidth_percent"] = int(w[2])
        elif (w[:3] == ["random-detect", "ecn", "minimum-threshold"] and len(w) >= 8
              and w[5] == "maximum-threshold" and w[4] == w[7]):
            t = {"units": w[4], "min": int(w[3]), "max": int(w[6])}
            if w[8:9] == ["max-mark-probability"]:
                t["max_probability"] = int(w[9])
            q["random_detect"] = {"ecn": {"threshold": t}}
        else:
            raise Unmapped(line)


def profile(node, sc):
    name = node[0].split()[2]
    p = {"name": name}
    pfc = {}
    for child in node[1]:
        line, _ = child
        w = line.split()
        if w[:2] == ["qos", "trust"]:
            p["trust"] = w[2]
        elif w[0] in ("tx-queue", "uc-tx-queue"):
            q = {"id": int(w[1])}
            queue(child, q)
            p.setdefault(w[0].replace("-", "_") + "s", []).append(q)
        elif line == "priority-flow-control on":
            pfc["enabled"] = True
        elif w[:2] == ["priority-flow-control", "priority"] and w[3:] == ["no-drop"]:
            pfc.setdefault("priorities", []).append({"priority": int(w[2]), "no_drop": True})
        elif line == "priority-flow-control pause watchdog":
            pfc["watchdog"] = {"enabled": True}
        else:
            raise Unmapped(line)
    if pfc:
        p["priority_flow_control"] = pfc
    sc.setdefault("qos_profiles", []).append(p)


def interface(node, sc):
    name = node[0].split()[1]
    vlan = name.startswith("Vlan")
    i = {"name": name}
    for line, _ in node[1]:
        w = line.split()
        if w[0] == "description":
            i["description"] = line[len("description "):]
        elif w[0] == "mtu":
            i["mtu"] = int(w[1])
        elif w[:2] == ["ip", "address"]:
            i["ip_address"] = w[2]
        elif w[:3] == ["switchport", "access", "vlan"] and not vlan:
            i.setdefault("switchport", {})["access_vlan"] = int(w[3])
        elif line == "no switchport" and not vlan:
            i.setdefault("switchport", {})["enabled"] = False
        elif w[0] == "service-profile" and not vlan:
            i["service_profile"] = w[1]
        elif w[:3] == ["arp", "aging", "timeout"] and vlan:
            i["arp_aging_timeout"] = int(w[3])
        elif w[:4] == ["arp", "cache", "dynamic", "capacity"] and vlan:
            i["arp_cache_dynamic_capacity"] = int(w[4])
        elif line == "arp gratuitous accept":
            i["arp_gratuitous_accept"] = True
        else:
            raise Unmapped(line)
    sc.setdefault("vlan_interfaces" if vlan else "ethernet_interfaces", []).append(i)


def structured(tree):
    sc = {}
    wd = {}
    for node in tree:
        line, children = node
        w = line.split()
        if w[0] == "hostname":
            sc["hostname"] = w[1]
        elif w[:2] == ["qos", "map"]:
            sc.setdefault("qos", {}).setdefault("map", {}).setdefault(
                w[2].replace("-", "_"), []).append(" ".join(w[3:]))
        elif w[:4] == ["priority-flow-control", "pause", "watchdog", "default"]:
            wd[w[4].replace("-", "_")] = w[5]
        elif w[:4] == ["priority-flow-control", "pause", "watchdog", "action"]:
            wd["action"] = w[4]
        elif w[:4] == ["arp", "aging", "timeout", "default"]:
            sc["arp"] = {"aging": {"timeout_default": int(w[4])}}
        elif w[:2] == ["qos", "profile"]:
            profile(node, sc)
        elif w[0] == "vlan":
            v = {"id": int(w[1])}
            for c, _ in children:
                if c.split()[0] != "name":
                    raise Unmapped(c)
                v["name"] = c.split()[1]
            sc.setdefault("vlans", []).append(v)
        elif w[0] == "interface":
            interface(node, sc)
        else:
            raise Unmapped(line)
    if wd:
        sc["priority_flow_control"] = {"watchdog": wd}
    return sc


def strip_unproven(tree, unproven):
    kept = []
    for line, children in tree:
        if any(p.match(line) for p in NOT_IN_AVD):
            unproven.add(line)
            continue
        kept.append((line, strip_unproven(children, unproven)))
    return kept


def check(path):
    with open(path, encoding="utf-8") as f:
        ours = strip_unproven(blocks(f.read()), unproven := set())
    try:
        sc = structured(ours)
    except (Unmapped, ValueError, IndexError) as e:
        return [f"line not mapped to AVD's model: {e}"], unproven
    result = pyavd.validate_structured_config(sc)
    errors = [f"AVD schema: {'.'.join(map(str, v.path))}: {v.message}"
              for v in result.validation_result.violations]
    if result.validated_data is None or errors:
        return errors or ["AVD refused the structured configuration"], unproven
    theirs = {norm(b)[0]: norm(b) for b in blocks(pyavd.get_device_config(result.validated_data))}
    for b in ours:
        mine = norm(b)
        avd = theirs.get(mine[0])
        if avd is None:
            errors.append(f"AVD renders no line {mine[0]!r}")
        elif avd != mine:
            errors.append(f"block {mine[0]!r}: ours {mine[1]} AVD's {avd[1]}")
    return errors, unproven


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    failed = 0
    for path in argv[1:]:
        errors, unproven = check(path)
        print(f"{'FAIL' if errors else 'PASS'} {path}")
        for e in errors:
            print(f"  {e}")
        for u in sorted(unproven):
            print(f"  not proven by AVD (no model): {u}")
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
