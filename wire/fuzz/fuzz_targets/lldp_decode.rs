//! Fuzzes the LLDP receive path: frame and LLDPDU decoding, re-encoding, conversion to the
//! schema, and the receive table. Any panic is a bug; so is a decoded LLDPDU that does not
//! survive an encode/decode round trip unchanged.

#![no_main]

use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use spinel_wire::lldp::{Lldpdu, LocalSystem, RemoteTable, decode_frame};
use spinel_wire::neighbor::Neighbor;

fn check(pdu: &Lldpdu<'_>) {
    let wire = pdu.to_vec().expect("a decoded LLDPDU must re-encode");
    let again = Lldpdu::decode(&wire).expect("a re-encoded LLDPDU must decode");
    assert_eq!(&again, pdu, "decode is not idempotent");
    let neighbor = Neighbor::from(pdu);
    serde_json::to_string(&neighbor).expect("a neighbour serialises");
    // Replaying what we heard may fail (lossy text can outgrow a TLV) but must not panic.
    let _ = LocalSystem::from(&neighbor).lldpdu(neighbor.ttl);
}

fuzz_target!(|data: &[u8]| {
    // A whole frame, as the socket delivers it.
    if let Ok(frame) = decode_frame(data) {
        check(&frame.lldpdu);
        let wire = frame
            .to_vec(usize::MAX)
            .expect("a decoded frame must re-encode");
        assert_eq!(
            decode_frame(&wire).expect("re-encoded frame decodes"),
            frame
        );
    }
    // The same octets as a bare LLDPDU reach the TLV rules without a valid Ethernet header.
    if let Ok(pdu) = Lldpdu::decode(data) {
        check(&pdu);
    }
    let mut table = RemoteTable::new(2);
    let now = Instant::now();
    table.receive_frame("eth0", data, now);
    table.expire(now);
});
