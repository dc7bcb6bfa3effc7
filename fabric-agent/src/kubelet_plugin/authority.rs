//! The kubelet's plugin watcher dials a plugin's registration socket with grpc-go and the
//! socket's path as the target (pkg/kubelet/pluginmanager/operationexecutor, Kubernetes
//! 1.36), so its requests carry that path as `:authority`. h2, under tonic, refuses such a
//! request as malformed (RST_STREAM, PROTOCOL_ERROR): registration would never happen. The
//! kubelet's own device-plugin client sends `localhost` for this reason (kubernetes#112597);
//! the plugin watcher's does not.
//!
//! So every connection is relayed through an in-memory pipe whose client-to-server side
//! rewrites the value of each `:authority` field literal in a HEADERS frame to `localhost`.
//! Only the literal's string is replaced (HPACK's static name index 1 stays); nothing else
//! in the stream changes. The server's dynamic table then holds a shorter entry than the
//! client's, so it evicts no earlier and every index the client sends means the same entry.
//! A header block that does not parse (or continues in a CONTINUATION frame) passes as it is.

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

/// The authority every request is given.
const AUTHORITY: &[u8] = b"localhost";
/// The HTTP/2 client connection preface.
const PREFACE_LEN: usize = 24;
const FRAME_HEADERS: u8 = 0x1;
const FLAG_PADDED: u8 = 0x8;
const FLAG_PRIORITY: u8 = 0x20;

/// Copies an HTTP/2 client stream from `from` to `to`, rewriting `:authority`, until either
/// side closes.
pub(super) async fn relay_client_stream(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
) -> std::io::Result<()> {
    let mut preface = [0u8; PREFACE_LEN];
    from.read_exact(&mut preface).await?;
    to.write_all(&preface).await?;
    loop {
        let mut head = [0u8; 9];
        match from.read_exact(&mut head).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let mut payload = vec![0u8; len];
        from.read_exact(&mut payload).await?;
        if head[3] == FRAME_HEADERS
            && let Some(rewritten) = headers_payload(head[4], &payload)
            && let Ok(new_len) = u32::try_from(rewritten.len())
            && new_len < 1 << 24
        {
            head[..3].copy_from_slice(&new_len.to_be_bytes()[1..]);
            payload = rewritten;
        }
        to.write_all(&head).await?;
        to.write_all(&payload).await?;
        to.flush().await?;
    }
}

/// A HEADERS frame's payload with its header block rewritten; `None` when nothing changes.
fn headers_payload(flags: u8, payload: &[u8]) -> Option<Vec<u8>> {
    let mut start = 0;
    let mut end = payload.len();
    if flags & FLAG_PADDED != 0 {
        start = 1;
        end = end.checked_sub(usize::from(*payload.first()?))?;
    }
    if flags & FLAG_PRIORITY != 0 {
        start += 5;
    }
    let block = rewrite_block(payload.get(start..end)?)?;
    let mut out = Vec::with_capacity(payload.len());
    out.extend_from_slice(&payload[..start]);
    out.extend_from_slice(&block);
    out.extend_from_slice(&payload[end..]);
    Some(out)
}

/// An HPACK integer with an `prefix`-bit prefix at `at`: (value, bytes taken).
fn integer(block: &[u8], at: usize, prefix: u32) -> Option<(usize, usize)> {
    let mask = (1usize << prefix) - 1;
    let first = usize::from(*block.get(at)?) & mask;
    if first < mask {
        return Some((first, 1));
    }
    let (mut value, mut taken, mut shift) = (first, 1, 0);
    loop {
        let b = *block.get(at + taken)?;
        taken += 1;
        value = value.checked_add(usize::from(b & 0x7f).checked_shl(shift)?)?;
        shift += 7;
        if b & 0x80 == 0 {
            return Some((value, taken));
        }
        if shift > 28 {
            return None;
        }
    }
}

/// The length in bytes of the HPACK string literal at `at`.
fn string(block: &[u8], at: usize) -> Option<usize> {
    let (len, taken) = integer(block, at, 7)?;
    let total = taken.checked_add(len)?;
    (at.checked_add(total)? <= block.len()).then_some(total)
}

/// `block` with every `:authority` literal's value replaced; `None` when there is none or
/// the block does not parse.
fn rewrite_block(block: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(block.len());
    let (mut at, mut changed) = (0, false);
    while at < block.len() {
        let b = block[at];
        let (prefix, literal) = match b {
            _ if b & 0x80 != 0 => (7, false),    // indexed field
            _ if b & 0xc0 == 0x40 => (6, true),  // literal, incremental indexing
            _ if b & 0xe0 == 0x20 => (5, false), // dynamic table size update
            _ => (4, true),                      // literal, not indexed / never indexed
        };
        let (index, taken) = integer(block, at, prefix)?;
        let mut next = at + taken;
        if !literal {
            out.extend_from_slice(&block[at..next]);
            at = next;
            continue;
        }
        if index == 0 {
            next += string(block, next)?;
        }
        let value = string(block, next)?;
        out.extend_from_slice(&block[at..next]);
        if index == 1 {
            // Static table entry 1 is `:authority`; a plain (not Huffman) string.
            out.push(u8::try_from(AUTHORITY.len()).ok()?);
            out.extend_from_slice(AUTHORITY);
            changed = true;
        } else {
            out.extend_from_slice(&block[next..next + value]);
        }
        at = next + value;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(first: u8, value: &[u8]) -> Vec<u8> {
        let mut v = vec![first, u8::try_from(value.len()).unwrap()];
        v.extend_from_slice(value);
        v
    }

    /// A header block as grpc-go writes it for the plugin watcher's `GetInfo`.
    fn get_info_block(authority: &[u8]) -> Vec<u8> {
        let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
        block.extend(literal(0x44, b"/pluginregistration.Registration/GetInfo"));
        block.extend(literal(0x41, authority));
        // te: trailers, a literal with a new name, not indexed.
        block.extend([0x00, 2, b't', b'e', 8]);
        block.extend(b"trailers");
        block
    }

    #[test]
    fn the_socket_path_as_authority_becomes_localhost_and_the_rest_stays() {
        let path = b"/var/lib/kubelet/plugins_registry/spinel.dev-rail0.sock";
        let block = get_info_block(path);
        let rewritten = rewrite_block(&block).unwrap();
        assert_eq!(rewritten, get_info_block(b"localhost"));
        // Indexed only (a later request on the connection): nothing to change.
        assert_eq!(rewrite_block(&[0x83, 0x86, 0xbe, 0xbf]), None);
        // Truncated: passes as it is.
        assert_eq!(rewrite_block(&block[..block.len() - 3]), None);
    }

    #[test]
    fn padding_and_priority_are_kept_around_the_block() {
        let block = get_info_block(b"/x.sock");
        let mut payload = vec![2u8, 0, 0, 0, 1, 16];
        payload.extend(&block);
        payload.extend([0, 0]);
        let out = headers_payload(FLAG_PADDED | FLAG_PRIORITY, &payload).unwrap();
        assert_eq!(&out[..6], &payload[..6]);
        assert_eq!(&out[6..out.len() - 2], get_info_block(b"localhost"));
        assert_eq!(&out[out.len() - 2..], [0, 0]);
    }

    #[tokio::test]
    async fn frames_are_relayed_with_lengths_fixed() {
        let mut input = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        let settings = [0u8, 0, 0, 0x4, 0, 0, 0, 0, 0];
        input.extend(settings);
        let block = get_info_block(b"/a/very/long/socket/path.sock");
        let len = u8::try_from(block.len()).unwrap();
        input.extend([0, 0, len, FRAME_HEADERS, 0x4, 0, 0, 0, 1]);
        input.extend(&block);
        let mut output = Vec::new();
        relay_client_stream(&input[..], &mut output).await.unwrap();
        let expected_block = get_info_block(b"localhost");
        let mut expected = input[..24 + 9].to_vec();
        expected.extend([
            0,
            0,
            u8::try_from(expected_block.len()).unwrap(),
            1,
            0x4,
            0,
            0,
            0,
            1,
        ]);
        expected.extend(expected_block);
        assert_eq!(output, expected);
    }
}
