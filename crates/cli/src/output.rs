//! Standard output for every command.
//!
//! A reader that goes away (`datarepo … | head`) closes the pipe. The
//! command then ends at once, quietly and with success: its work is done
//! (output comes after it) and nobody is left to read the rest. Any other
//! failure to write (a full disk under a redirection) ends it with a
//! message and status 1. `println!` would panic in both cases.

use std::io::{self, Write};

use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

/// Ends the process for a failed write to stdout; never returns.
pub(crate) fn stdout_failed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("datarepo: cannot write to standard output: {e}");
    std::process::exit(1);
}

/// A command's failure: a name (the XRPC error name the API answers for the
/// same failure, `Error` when the API has none) and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    pub(crate) name: String,
    pub(crate) message: String,
}

impl CliError {
    /// The failure `e`, named as the API names it, with `hint` after its
    /// message.
    pub(crate) fn repo(e: &repo::Error, hint: &str) -> Self {
        Self {
            name: e.xrpc_name().to_owned(),
            message: format!("{e}{hint}"),
        }
    }

    /// The same failure, its message followed by `more`.
    #[must_use]
    pub(crate) fn and(mut self, more: &str) -> Self {
        self.message.push_str(more);
        self
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<String> for CliError {
    fn from(message: String) -> Self {
        Self {
            name: "Error".to_owned(),
            message,
        }
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

/// Reports a command's failure on stderr: `datarepo: MESSAGE`, or with
/// `--json` one JSON object `{"error": NAME, "message": MESSAGE}`, the
/// shape the API answers errors in (stdout stays for results).
pub(crate) fn report_error(json_mode: bool, name: &str, message: &dyn std::fmt::Display) {
    if json_mode {
        eprintln!(
            "{}",
            serde_json::json!({"error": name, "message": message.to_string()})
        );
    } else {
        eprintln!("datarepo: {message}");
    }
}

/// The name of a failure that ended a command: its [`CliError`]'s when it
/// carries one, else `Error`.
pub(crate) fn error_name(e: &std::io::Error) -> &str {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<CliError>())
        .map_or("Error", |e| e.name.as_str())
}

/// Buffered, locked stdout whose writes cannot fail: a failure ends the
/// process as [`stdout_failed`] says.
pub(crate) struct Stdout(io::BufWriter<io::StdoutLock<'static>>);

impl Stdout {
    pub(crate) fn buffered() -> Self {
        Self(io::BufWriter::new(io::stdout().lock()))
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).or_else(|e| stdout_failed(&e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().or_else(|e| stdout_failed(&e))
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        // What is buffered goes out (or the process ends) before the lock
        // is released.
        let _ = self.flush();
    }
}

/// `println!` to stdout, through [`Stdout`].
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = $crate::output::Stdout::buffered();
        let _ = writeln!(out, $($arg)*);
    }};
}

/// `print!` to stdout, through [`Stdout`].
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = $crate::output::Stdout::buffered();
        let _ = write!(out, $($arg)*);
    }};
}

pub(crate) use {out, outln};

pub(crate) type Result<T> = std::result::Result<T, CliError>;

pub(crate) fn bar(template: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(progress_style(template));
    bar
}

/// A progress style from `template`, with two keys of its own: `per_sec`
/// as a whole number (`1234/s`), and `eta` as `3m left`, or `estimating`
/// for the first seconds (an estimate from a moment's progress can say
/// hours for a job of seconds).
pub(crate) fn progress_style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
        .with_key(
            "per_sec",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        )
        .with_key(
            "eta",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let settled = state.elapsed() >= std::time::Duration::from_secs(3)
                    && state.fraction() >= 0.01;
                let _ = if settled {
                    write!(w, "{} left", indicatif::HumanDuration(state.eta()))
                } else {
                    write!(w, "estimating")
                };
            },
        )
}

/// `n` and `what`, plural when `n` is not 1: `1 record`, `2 records`.
pub(crate) fn count(n: u64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

pub(crate) fn print(json_mode: bool, value: &Value, human: impl FnOnce() -> String) {
    if json_mode {
        outln!("{value}");
    } else {
        outln!("{}", human());
    }
}
