//! Standard output for every command.
//!
//! A reader that goes away (`datarepo … | head`) closes the pipe. The
//! command then ends at once, quietly and with success: its work is done
//! (output comes after it) and nobody is left to read the rest. Any other
//! failure to write (a full disk under a redirection) ends it with a
//! message and status 1. `println!` would panic in both cases.

use std::io::{self, Write};

/// Ends the process for a failed write to stdout; never returns.
pub(crate) fn stdout_failed(e: &io::Error) -> ! {
    if e.kind() == io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("datarepo: cannot write to standard output: {e}");
    std::process::exit(1);
}

/// Reports a command's failure on stderr: `datarepo: MESSAGE`, or with
/// `--json` one JSON object `{"error": MESSAGE}` (stdout stays for results).
pub(crate) fn report_error(json_mode: bool, message: &dyn std::fmt::Display) {
    if json_mode {
        eprintln!("{}", serde_json::json!({"error": message.to_string()}));
    } else {
        eprintln!("datarepo: {message}");
    }
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
