//! Logs on stderr: one JSON object per line (with the fields of the current span, so a
//! reconcile, an extender request or a duty pass can be followed by node, NIC or gang), or
//! plain text for people.

use tracing_subscriber::EnvFilter;

/// How logs are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One JSON object per line, with the current span's fields.
    #[default]
    Json,
    /// Human-readable, with the span context before each message.
    Text,
}

/// The logging flags every daemon takes (`#[command(flatten)]`).
#[derive(Clone, Debug, clap::Args)]
pub struct LogArgs {
    /// Log format.
    #[arg(long, value_enum, default_value = "json")]
    pub log_format: LogFormat,
    /// Log filter (tracing's syntax, e.g. `info` or `spinel_agent=debug`).
    #[arg(long, env = "SPINEL_LOG", default_value = "info")]
    pub log: String,
}

/// Installs the global subscriber. An unparsable filter falls back to `info` (with a warning
/// once the subscriber is up), so a typo never silences a daemon.
pub fn init(args: &LogArgs) {
    let parsed = EnvFilter::try_new(&args.log);
    let filter = parsed
        .as_ref()
        .map(|f| f.to_string())
        .unwrap_or_else(|_| "info".to_owned());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(filter))
        .with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .init(),
        LogFormat::Text => builder.with_ansi(false).init(),
    }
    if let Err(e) = parsed {
        tracing::warn!(filter = %args.log, "log filter not understood, logging at info: {e}");
    }
}
