//! A synchronous request/response netlink socket, generic over the message family.

use std::fmt::Debug;
use std::io;
use std::marker::PhantomData;

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_MULTIPART, NLM_F_REQUEST, NetlinkDeserializable, NetlinkHeader,
    NetlinkMessage, NetlinkPayload, NetlinkSerializable,
};
use netlink_sys::{Socket as RawSocket, SocketAddr};

/// A failed netlink operation: what was attempted, and the kernel's answer.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}{}", kernel_message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default())]
pub struct NetlinkError {
    /// The operation, in iproute2 terms where possible (`ip link set eth1 mtu 9000`).
    pub what: String,
    /// The error (an errno from the kernel, or a socket failure).
    pub source: io::Error,
    /// The kernel's extended-ACK message, when it gave one ("MTU too large", ...).
    pub kernel_message: Option<String>,
}

/// The meaning of a failed netlink request, for callers that react to specific answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetlinkErrorKind {
    /// The object (link name, address, route, rule) already exists (`EEXIST`).
    AlreadyExists,
    /// The object does not exist (`ENOENT`, `ESRCH`).
    NotFound,
    /// The device does not exist (`ENODEV`).
    NoDevice,
    /// The object is in use (`EBUSY`).
    Busy,
    /// The driver or kernel does not implement the request (`EOPNOTSUPP`).
    NotSupported,
    /// The caller lacks the capability (`EPERM`, `EACCES`).
    PermissionDenied,
    /// Anything else, including socket failures.
    Other,
}

impl NetlinkError {
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Self {
        Self {
            what: what.into(),
            source,
            kernel_message: None,
        }
    }

    /// The errno, when the kernel answered with one.
    pub fn errno(&self) -> Option<i32> {
        self.source.raw_os_error()
    }

    /// True for the given errno (`libc::EEXIST`, ...).
    pub fn is(&self, errno: i32) -> bool {
        self.errno() == Some(errno)
    }

    /// What the kernel's answer means for a caller, so callers outside `hostnet` never
    /// interpret errnos themselves.
    pub fn kind(&self) -> NetlinkErrorKind {
        match self.errno() {
            Some(libc::EEXIST) => NetlinkErrorKind::AlreadyExists,
            Some(libc::ENOENT | libc::ESRCH) => NetlinkErrorKind::NotFound,
            Some(libc::ENODEV) => NetlinkErrorKind::NoDevice,
            Some(libc::EBUSY) => NetlinkErrorKind::Busy,
            Some(libc::EOPNOTSUPP) => NetlinkErrorKind::NotSupported,
            Some(libc::EPERM | libc::EACCES) => NetlinkErrorKind::PermissionDenied,
            _ => NetlinkErrorKind::Other,
        }
    }

    /// Prefixes the operation description, keeping the kernel's answer.
    pub fn context(mut self, what: impl std::fmt::Display) -> Self {
        self.what = format!("{what}: {}", self.what);
        self
    }
}

/// A netlink socket speaking message family `M` (route, RDMA, ...).
pub struct Socket<M> {
    raw: RawSocket,
    seq: u32,
    _family: PhantomData<M>,
}

/// `NLMSGERR_ATTR_MSG`: the extended ACK's text attribute.
const NLMSGERR_ATTR_MSG: u16 = 1;

impl<M> Socket<M>
where
    M: NetlinkSerializable + NetlinkDeserializable + Debug,
{
    /// Opens a socket of `protocol` in the calling thread's namespace.
    pub fn open(protocol: isize) -> Result<Self, NetlinkError> {
        let fail = |e| NetlinkError::io("open netlink socket", e);
        let mut raw = RawSocket::new(protocol).map_err(fail)?;
        raw.bind_auto().map_err(fail)?;
        // Best effort: kernels without these options still answer with plain errnos.
        let _ = raw.set_ext_ack(true);
        let _ = raw.set_cap_ack(true);
        Ok(Self {
            raw,
            seq: 0,
            _family: PhantomData,
        })
    }

    /// Sends `message` and waits for the kernel's acknowledgement.
    pub fn request(
        &mut self,
        message: M,
        flags: u16,
        what: impl Into<String>,
    ) -> Result<(), NetlinkError> {
        self.exchange(message, flags | NLM_F_ACK, what).map(drop)
    }

    /// Sends `message` with `NLM_F_ACK` and returns the replies the kernel sent before its
    /// acknowledgement (dcbnl answers every request, sets included, with a message of its own).
    pub fn transact(
        &mut self,
        message: M,
        what: impl Into<String>,
    ) -> Result<Vec<M>, NetlinkError> {
        self.exchange(message, NLM_F_ACK, what)
    }

    /// Sends a `GET` request for one object and returns the kernel's replies.
    pub fn get(&mut self, message: M, what: impl Into<String>) -> Result<Vec<M>, NetlinkError> {
        self.exchange(message, 0, what)
    }

    /// Sends a dump request and returns every object in the reply.
    pub fn dump(&mut self, message: M, what: impl Into<String>) -> Result<Vec<M>, NetlinkError> {
        self.exchange(message, NLM_F_DUMP, what)
    }

    /// Encodes `message` exactly as it would be sent with `flags` and sequence number `seq`.
    ///
    /// Used by tests that compare our requests with iproute2's, byte for byte.
    pub fn encode(message: M, flags: u16, seq: u32) -> Vec<u8> {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = seq;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(message));
        packet.finalize();
        let mut buf = vec![0; packet.buffer_len()];
        packet.serialize(&mut buf);
        buf
    }

    fn exchange(
        &mut self,
        message: M,
        flags: u16,
        what: impl Into<String>,
    ) -> Result<Vec<M>, NetlinkError> {
        let what = what.into();
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let buf = Self::encode(message, flags, seq);
        let kernel = SocketAddr::new(0, 0);
        self.raw
            .send_to(&buf, &kernel, 0)
            .map_err(|e| NetlinkError::io(what.clone(), e))?;

        let expect_done = flags & NLM_F_DUMP == NLM_F_DUMP;
        let mut replies = Vec::new();
        loop {
            let (datagram, _) = self
                .raw
                .recv_from_full()
                .map_err(|e| NetlinkError::io(what.clone(), e))?;
            let mut offset = 0;
            while offset < datagram.len() {
                let bytes = &datagram[offset..];
                let packet = NetlinkMessage::<M>::deserialize(bytes).map_err(|e| {
                    NetlinkError::io(what.clone(), io::Error::new(io::ErrorKind::InvalidData, e))
                })?;
                let len = packet.header.length as usize;
                if len == 0 {
                    break;
                }
                offset += len.next_multiple_of(4);
                if packet.header.sequence_number != seq {
                    // A late answer to an earlier request that was abandoned: not ours.
                    continue;
                }
                let multipart = packet.header.flags & NLM_F_MULTIPART != 0;
                match packet.payload {
                    NetlinkPayload::Done(_) => return Ok(replies),
                    // A plain ACK ends a request; a dump ends with NLMSG_DONE instead.
                    NetlinkPayload::Error(err) if err.code.is_none() && !expect_done => {
                        return Ok(replies);
                    }
                    NetlinkPayload::Error(err) if err.code.is_none() => {}
                    NetlinkPayload::Error(err) => {
                        return Err(NetlinkError {
                            what,
                            source: err.to_io(),
                            kernel_message: ext_ack_message(&err.header),
                        });
                    }
                    NetlinkPayload::InnerMessage(inner) => {
                        replies.push(inner);
                        if !expect_done && !multipart && flags & NLM_F_ACK == 0 {
                            return Ok(replies);
                        }
                    }
                    NetlinkPayload::Noop | NetlinkPayload::Overrun(_) => {}
                    _ => {}
                }
            }
        }
    }
}

/// Extracts `NLMSGERR_ATTR_MSG` from an error payload that follows the echoed request header
/// (16 bytes, because NETLINK_CAP_ACK keeps the request body out).
fn ext_ack_message(after_code: &[u8]) -> Option<String> {
    let mut attrs = after_code.get(16..)?;
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]) & 0x3fff;
        if len < 4 || len > attrs.len() {
            return None;
        }
        if kind == NLMSGERR_ATTR_MSG {
            let text = &attrs[4..len];
            let text = text.split(|b| *b == 0).next().unwrap_or_default();
            return Some(String::from_utf8_lossy(text).into_owned());
        }
        attrs = attrs.get(len.next_multiple_of(4)..).unwrap_or_default();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext_ack_text_is_found_after_the_echoed_header() {
        let mut payload = vec![0u8; 16];
        let msg = b"MTU too large\0";
        let len = (4 + msg.len()) as u16;
        payload.extend_from_slice(&len.to_ne_bytes());
        payload.extend_from_slice(&NLMSGERR_ATTR_MSG.to_ne_bytes());
        payload.extend_from_slice(msg);
        assert_eq!(ext_ack_message(&payload).as_deref(), Some("MTU too large"));
        assert_eq!(ext_ack_message(&payload[..10]), None);
        let mut bad = payload.clone();
        bad[16] = 200;
        assert_eq!(ext_ack_message(&bad), None);
    }
}
