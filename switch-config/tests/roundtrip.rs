//! Render → parse back → the same switch state the intent requires, for every OS.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use spinel_switch_config::intent::{self, SwitchOs};
use spinel_switch_config::observe;
use spinel_switch_config::plan::FabricPlan;
use spinel_switch_config::render::{self, Running};
use spinel_switch_config::state;

#[test]
fn every_rendered_example_reads_back_as_its_intent() {
    let i =
        intent::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fabric-intent.yaml"))
            .unwrap();
    let plan = FabricPlan::new(&i);
    for sp in &plan.switches {
        let r = render::switch(&plan, sp, &Running::default());
        let main = &r.files[0];
        let observed = match sp.switch.os {
            SwitchOs::Sonic => observe::parse(SwitchOs::Sonic, &main.text).unwrap(),
            SwitchOs::Cumulus => observe::parse(SwitchOs::Cumulus, &r.files[1].text).unwrap(),
            SwitchOs::Eos => observe::parse(SwitchOs::Eos, &main.text).unwrap(),
        };
        let expected = state::expected(&plan, sp);
        assert_eq!(observed, expected, "{}", sp.switch.name);
    }
}
