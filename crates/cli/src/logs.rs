//! Where the logs go.

/// Logs go to stderr, filtered by `RUST_LOG` (else `default_filter`), in
/// colour only when stderr is a terminal and `NO_COLOR` is unset or empty
/// (<https://no-color.org>): a file or a pipe gets plain text.
///
/// With `background`, a thread writes them, buffered, and flushes whenever
/// no line is waiting (the server: one unbuffered write per access line
/// cost 12–16% of its read throughput); lines are never dropped (a full
/// queue makes loggers wait). The returned guard flushes what is left when
/// it is dropped.
pub(crate) fn init_logs(
    default_filter: &str,
    format: &str,
    background: bool,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    use std::io::IsTerminal;
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let (writer, guard) = if background {
        let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
            .lossy(false)
            .finish(std::io::BufWriter::new(std::io::stderr()));
        (BoxMakeWriter::new(writer), Some(guard))
    } else {
        (BoxMakeWriter::new(std::io::stderr), None)
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(writer);
    // A second initialization (none is made) would be refused, not fatal.
    let _ = if format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    guard
}
