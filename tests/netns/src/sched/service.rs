//! [`ExtenderService`]: what a Kubernetes Service in front of `spinel-scheduler` does for
//! kube-scheduler (send each request to a ready replica), plus a recorder: every exchange
//! (verb, request body as kube-scheduler sent it, status, reply) is kept for the tests to read
//! and to keep as fixtures. HTTP/1.1 over loopback, one thread per connection.
//!
//! Also [`http`], the plain HTTP/1.1 client the tests use to talk to a replica directly.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request kube-scheduler made and the answer it got.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The path after the URL prefix, e.g. `/filter`.
    pub path: String,
    /// The request body, byte for byte.
    pub request: Vec<u8>,
    /// The HTTP status returned.
    pub status: u16,
    /// The reply body, byte for byte.
    pub reply: Vec<u8>,
    /// The replica that answered (`None`: no replica was ready).
    pub backend: Option<SocketAddr>,
}

impl Exchange {
    /// The request body as JSON (`Null` if it is not JSON).
    pub fn request_json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.request).unwrap_or_default()
    }

    /// The reply body as JSON (`Null` if it is not JSON).
    pub fn reply_json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.reply).unwrap_or_default()
    }

    /// The name of the pod the request is about (`Pod.metadata.name`, or `PodName` for bind).
    pub fn pod_name(&self) -> String {
        let v = self.request_json();
        v["Pod"]["metadata"]["name"]
            .as_str()
            .or(v["PodName"].as_str())
            .unwrap_or_default()
            .to_owned()
    }
}

#[derive(Default)]
struct Shared {
    backends: Vec<SocketAddr>,
    exchanges: Vec<Exchange>,
}

/// A loopback "Service" for the extender replicas, recording what passes through it.
pub struct ExtenderService {
    port: u16,
    shared: Arc<Mutex<Shared>>,
}

impl ExtenderService {
    /// Listens on a free loopback port; no replica yet (requests get 503 until one is added).
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the extender service");
        let port = listener.local_addr().expect("local address").port();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let accept = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = accept.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        Self { port, shared }
    }

    /// The URL prefix kube-scheduler is configured with.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Adds a replica; requests go to the first one whose `/readyz` answers 200.
    pub fn add_backend(&self, addr: SocketAddr) {
        self.shared.lock().unwrap().backends.push(addr);
    }

    /// Every exchange so far, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.shared.lock().unwrap().exchanges.clone()
    }

    /// How many exchanges so far (a mark to read later ones from).
    pub fn count(&self) -> usize {
        self.shared.lock().unwrap().exchanges.len()
    }

    /// The exchanges after `mark` (a value of [`Self::count`]).
    pub fn since(&self, mark: usize) -> Vec<Exchange> {
        self.shared.lock().unwrap().exchanges[mark..].to_vec()
    }
}

/// A request read from a keep-alive connection.
struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().map_err(io::Error::other)?;
            }
            assert!(
                !name.eq_ignore_ascii_case("transfer-encoding"),
                "kube-scheduler sent a chunked body; the test service reads Content-Length only"
            );
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(Request { method, path, body }))
}

fn serve(stream: TcpStream, shared: &Mutex<Shared>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    while let Ok(Some(req)) = read_request(&mut reader) {
        let backends = shared.lock().unwrap().backends.clone();
        // Like a Service's endpoints: only ready replicas get traffic.
        let backend = backends.into_iter().find(|b| {
            http(*b, "GET", "/readyz", b"")
                .map(|(status, _)| status == 200)
                .unwrap_or(false)
        });
        let (status, reply) = match backend {
            Some(b) => http(b, &req.method, &req.path, &req.body)
                .unwrap_or_else(|e| (502, format!("replica {b}: {e}").into_bytes())),
            None => (503, b"no ready spinel-scheduler replica".to_vec()),
        };
        shared.lock().unwrap().exchanges.push(Exchange {
            path: req.path.clone(),
            request: req.body,
            status,
            reply: reply.clone(),
            backend,
        });
        let head = format!(
            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            reply.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(&reply).is_err() {
            return;
        }
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`): the status and body.
pub fn http(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::other("no end of headers in the reply"))?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad status line: {head}")))?;
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "a chunked reply from {addr}{path}; the test client reads whole bodies only"
    );
    Ok((status, raw[split + 4..].to_vec()))
}
