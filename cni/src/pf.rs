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
    check("vlan", want.vlan.to_string(), have.vlan.to_string());
    check("vlanQoS", want.qos.to_string(), have.qos.to_string());
    check("vlanProto", want.proto.to_string(), have.proto.to_string());
    check(
        "spoofchk",
        want.spoofchk.to_string(),
        have.spoofchk.to_string(),
    );
    check("trust", want.trust.to_string(), have.trust.to_string());
    check(
        "linkState",
        want.link_state.to_string(),
        have.link_state.to_string(),
    );
    check(
        "minTxRate",
        want.min_tx_rate.to_string(),
        have.min_tx_rate.to_string(),
    );
    check(
        "maxTxRate",
        want.max_tx_rate.to_string(),
        have.max_tx_rate.to_string(),
    );
    out
}

#[cfg(test)]
mod tests {
    use hostnet::netlink::{VfLinkMode, VlanProto};

    use super::*;

    #[test]
    fn differences_name_the_configuration_fields() {
        let want = VfSettings {
            vlan: 100,
            proto: VlanProto::Dot1Ad,
            trust: true,
            link_state: VfLinkMode::Enable,
            ..VfSettings::factory_default(2)
        };
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
