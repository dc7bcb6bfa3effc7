//! Comparing the VF attributes a configuration asked for with what the PF reports. Setting and
//! reading them is `hostnet::sriov::pf_control`'s job.

use hostnet::netlink::VfSettings;

/// The attributes in which `have` differs from `want`, by configuration name.
pub fn differences(want: &VfSettings, have: &VfSettings) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, w: String, h: String| {
        if w != h {
            out.push(format!("{name} (asked {w}, PF reports {h})"));
        }
    };
    check("mac", want.mac.to_string(), have.mac.to_string());
    let (w, h) = (&want.attributes, &have.attributes);
    check("vlan", w.vlan.to_string(), h.vlan.to_string());
    check("vlanQoS", w.qos.to_string(), h.qos.to_string());
    check("vlanProto", w.proto.to_string(), h.proto.to_string());
    check("spoofchk", w.spoofchk.to_string(), h.spoofchk.to_string());
    check("trust", w.trust.to_string(), h.trust.to_string());
    check(
        "linkState",
        w.link_state.to_string(),
        h.link_state.to_string(),
    );
    check(
        "minTxRate",
        w.min_tx_rate.to_string(),
        h.min_tx_rate.to_string(),
    );
    check(
        "maxTxRate",
        w.max_tx_rate.to_string(),
        h.max_tx_rate.to_string(),
    );
    out
}

#[cfg(test)]
mod tests {
    use hostnet::netlink::{VfAttributes, VfLinkMode, VlanProto};
    use spinel_wire::MacAddr;

    use super::*;

    #[test]
    fn differences_name_the_configuration_fields() {
        let want = VfAttributes {
            vlan: 100,
            proto: VlanProto::Dot1Ad,
            trust: true,
            link_state: VfLinkMode::Enable,
            ..VfAttributes::FACTORY_DEFAULT
        }
        .for_vf(2, MacAddr([0; 6]));
        let have = VfSettings::factory_default(2);
        let d = differences(&want, &have);
        assert_eq!(
            d,
            [
                "vlan (asked 100, PF reports 0)",
                "vlanProto (asked 802.1ad, PF reports 802.1Q)",
                "trust (asked true, PF reports false)",
                "linkState (asked enable, PF reports auto)",
            ]
        );
        assert!(differences(&have, &have).is_empty());
    }
}
