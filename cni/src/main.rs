//! `spinel`: the CNI plugin binary. Reads the invocation from the environment and the network
//! configuration from stdin, prints the result (or the CNI error) on stdout, logs to stderr
//! or the node's log file, and never anything else to stdout.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::ExitCode;
use std::sync::Mutex;

use spinel_cni::config::{LogLevel, MAX_CONFIG_BYTES};
use spinel_cni::settings::{self, Settings};
use spinel_cni::spec::env::Invocation;
use spinel_cni::spec::{CniError, ErrorCode};

fn main() -> ExitCode {
    // The detached helper that sends the later announcement rounds of an ADD.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("announce") {
        return spinel_cni::announce::run_followup(&argv[2..]);
    }
    // `spinel --version`: what the image and the node's installer compare. A runtime never
    // passes arguments (a CNI call is its environment and stdin), so this cannot shadow one.
    if argv.len() == 2 && argv[1] == "--version" {
        println!("spinel {}", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }
    let inv = Invocation::from_env(|k| std::env::var(k).ok());
    let mut stdin = Vec::new();
    let read = std::io::stdin()
        .take(MAX_CONFIG_BYTES as u64 + 1)
        .read_to_end(&mut stdin);
    let settings = Settings::load(std::env::var(settings::PATH_ENV).ok().as_deref())
        .map_err(|e| CniError::new(ErrorCode::InvalidEnvironment, e.to_string()));
    init_logging(&stdin, settings.as_ref().ok());

    let outcome = match read {
        Ok(_) => spinel_cni::run(inv, &stdin, settings),
        Err(e) => spinel_cni::run(
            Err(CniError::new(
                ErrorCode::Io,
                format!("cannot read stdin: {e}"),
            )),
            &stdin,
            settings,
        ),
    };
    if let Some(json) = outcome.stdout {
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer(&mut out, &json);
        let _ = out.write_all(b"\n");
    }
    if outcome.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn init_logging(stdin: &[u8], settings: Option<&Settings>) {
    let level = match spinel_cni::log_level(stdin, settings) {
        LogLevel::Error => tracing::Level::ERROR,
        LogLevel::Warn => tracing::Level::WARN,
        LogLevel::Info => tracing::Level::INFO,
        LogLevel::Debug => tracing::Level::DEBUG,
    };
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_ansi(false)
        .with_target(false);
    let file = settings.and_then(|s| s.log_file.as_ref()).and_then(|path| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .ok()
    });
    // Logs never go to stdout: that is where the runtime reads the result.
    match file {
        Some(f) => builder.with_writer(Mutex::new(f)).init(),
        None => builder.with_writer(std::io::stderr).init(),
    }
}
