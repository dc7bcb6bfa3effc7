//! The PF-side attributes of a VF (`ip link set PF vf N ...`), validated.

use hostnet::netlink::{VfAttributes, VlanProto};

use super::{NetConf, OnOff, invalid};
use crate::spec::CniError;

impl NetConf {
    /// The PF-side attributes to set on every ADD: what the configuration asks for, and the
    /// defaults for everything it leaves out, so nothing a previous pod left behind survives.
    pub fn vf_attributes(&self) -> Result<VfAttributes, CniError> {
        if self.vlan.is_none() {
            if self.vlan_qos.is_some() {
                return Err(invalid("vlanQoS: needs vlan"));
            }
            if self.vlan_proto.is_some() {
                return Err(invalid("vlanProto: needs vlan"));
            }
        }
        let vlan = self.vlan.unwrap_or(0);
        if vlan > 4094 {
            return Err(invalid(format!("vlan: {vlan} is out of range (0-4094)")));
        }
        let qos = self.vlan_qos.unwrap_or(0);
        if qos > 7 {
            return Err(invalid(format!("vlanQoS: {qos} is out of range (0-7)")));
        }
        if qos != 0 && vlan == 0 {
            return Err(invalid("vlanQoS: a priority needs a VLAN other than 0"));
        }
        let proto = self.vlan_proto.unwrap_or_default();
        if proto == VlanProto::Dot1Ad && vlan == 0 {
            return Err(invalid("vlanProto: 802.1ad needs a VLAN other than 0"));
        }
        let link_state = self.link_state.unwrap_or_default();
        let min_tx_rate = self.min_tx_rate.unwrap_or(0);
        let max_tx_rate = self.max_tx_rate.unwrap_or(0);
        if max_tx_rate != 0 && min_tx_rate > max_tx_rate {
            return Err(invalid(format!(
                "minTxRate: {min_tx_rate} exceeds maxTxRate {max_tx_rate}"
            )));
        }
        Ok(VfAttributes {
            vlan,
            qos,
            proto,
            spoofchk: self.spoofchk.is_none_or(OnOff::is_on),
            trust: self.trust.is_some_and(OnOff::is_on),
            link_state,
            min_tx_rate,
            max_tx_rate,
        })
    }
}

#[cfg(test)]
mod tests {
    use hostnet::netlink::VfLinkMode;

    use super::*;
    use crate::config::Config;
    use crate::spec::ErrorCode;

    fn parse(s: &str) -> Result<Config, CniError> {
        Config::parse(s.as_bytes())
    }

    #[test]
    fn vf_attributes_default_and_validate() {
        let base = r#""cniVersion":"1.0.0","name":"n","type":"spinel""#;
        let a = parse(&format!("{{{base}}}"))
            .unwrap()
            .conf
            .vf_attributes()
            .unwrap();
        assert_eq!(
            (a.vlan, a.qos, a.proto, a.spoofchk, a.trust),
            (0, 0, VlanProto::Dot1Q, true, false)
        );
        assert_eq!(
            (a.link_state, a.min_tx_rate, a.max_tx_rate),
            (VfLinkMode::Auto, 0, 0)
        );
        let a = parse(&format!(
            r#"{{{base},"vlan":100,"vlanQoS":3,"vlanProto":"802.1AD","spoofchk":"off","trust":"on","linkState":"enable","minTxRate":10,"maxTxRate":100}}"#
        ))
        .unwrap()
        .conf
        .vf_attributes()
        .unwrap();
        assert_eq!(
            (a.vlan, a.qos, a.proto, a.spoofchk, a.trust),
            (100, 3, VlanProto::Dot1Ad, false, true)
        );
        for (extra, field) in [
            (r#""vlan":4095"#, "vlan"),
            (r#""vlanQoS":1"#, "vlanQoS"),
            (r#""vlanProto":"802.1Q""#, "vlanProto"),
            (r#""vlan":0,"vlanQoS":2"#, "vlanQoS"),
            (r#""vlan":5,"vlanQoS":8"#, "vlanQoS"),
            (r#""vlan":0,"vlanProto":"802.1ad""#, "vlanProto"),
            (r#""vlan":5,"vlanProto":"qinq""#, "vlanProto"),
            (r#""spoofchk":"yes""#, "spoofchk"),
            (r#""trust":true"#, "trust"),
            (r#""linkState":"up""#, "linkState"),
            (r#""minTxRate":100,"maxTxRate":10"#, "minTxRate"),
            (r#""vlan":-1"#, "vlan"),
        ] {
            let err = parse(&format!("{{{base},{extra}}}")).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidConfig, "{extra}");
            assert!(err.msg.contains(field), "{extra}: {}", err.msg);
        }
    }
}
