//! `datarepo rkey …` and `datarepo tid …`.

use crate::output::outln;
use std::{
    io::{self, BufRead, Write},
    process::ExitCode,
};

use clap::{Args, Subcommand};
use rkey::{Tid, TidGenerator};
use serde_json::{Map, Value, json};

#[derive(Debug, Subcommand)]
pub(crate) enum RkeyCommand {
    /// Validate record keys given as arguments, or else one per stdin line.
    ///
    /// Prints one line per input: for a person at a terminal, "ok KEY" or
    /// "invalid KEY: why"; with --json, or when stdout is not a terminal
    /// (a pipe, a file, a script), one JSON object. Exit status: 0 if all
    /// are valid, 1 if any is invalid, 2 on usage errors (including a
    /// --json-lines input that is not a JSON string literal).
    Validate(ValidateArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum TidCommand {
    /// Validate TIDs given as arguments, or else one per stdin line.
    ///
    /// Like `rkey validate`; a valid TID also reports its timestamp
    /// (microseconds), clock id and whether its top bit is set.
    Validate(ValidateArgs),
    /// Print fresh TIDs from the system clock, one per line.
    New {
        /// How many TIDs to print.
        #[arg(short = 'n', long = "count", default_value_t = 1)]
        count: u64,
        /// Clock id (0-1023); random when absent.
        #[arg(long, value_parser = clap::value_parser!(u16).range(0..=1023))]
        clock_id: Option<u16>,
    },
    /// Show a TID's time (RFC 3339, microseconds) and clock id.
    Decode {
        /// The 13-character TID.
        tid: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// Each input is a JSON string literal (so any string, including one
    /// with newlines or control characters, can be given).
    #[arg(long)]
    json_lines: bool,
    /// Inputs to validate; when none are given, stdin is read line by line.
    inputs: Vec<String>,
}

pub(crate) fn run_rkey(cmd: RkeyCommand, json_mode: bool) -> io::Result<ExitCode> {
    match cmd {
        RkeyCommand::Validate(args) => validate_all(&args, json_mode, |input| {
            rkey::validate_record_key(input).map(|()| Map::new())
        }),
    }
}

pub(crate) fn run_tid(cmd: TidCommand, json_mode: bool) -> io::Result<ExitCode> {
    match cmd {
        TidCommand::Validate(args) => validate_all(&args, json_mode, |input| {
            Tid::parse(input).map(|tid| {
                let mut extra = Map::new();
                // The snake_case names are the interface `tid validate` was
                // specified with; the camelCase ones, every other JSON's
                // convention, say the same.
                extra.insert("timestamp_us".into(), tid.timestamp_micros().into());
                extra.insert("clock_id".into(), tid.clock_id().into());
                extra.insert("top_bit_set".into(), tid.top_bit_set().into());
                extra.insert("timestampUs".into(), tid.timestamp_micros().into());
                extra.insert("clockId".into(), tid.clock_id().into());
                extra.insert("topBitSet".into(), tid.top_bit_set().into());
                extra
            })
        }),
        TidCommand::New { count, clock_id } => {
            let mut builder = TidGenerator::builder();
            if let Some(id) = clock_id {
                builder = builder.clock_id(id);
            }
            let tids = builder.build().map_err(io::Error::other)?;
            let mut out = crate::output::Stdout::buffered();
            for _ in 0..count {
                let tid = tids.next_tid().map_err(io::Error::other)?;
                writeln!(out, "{tid}")?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        TidCommand::Decode { tid } => match Tid::parse(&tid) {
            Ok(tid) if json_mode => {
                outln!(
                    "{}",
                    serde_json::json!({
                        "tid": tid.to_string(),
                        "time": format_micros(tid.timestamp_micros()),
                        "micros": tid.timestamp_micros(),
                        "clockId": tid.clock_id(),
                        "topBitSet": tid.top_bit_set(),
                    })
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(e) if json_mode => {
                eprintln!(
                    "{}",
                    serde_json::json!({"error": format!("invalid TID {tid:?}: {e}")})
                );
                Ok(ExitCode::from(1))
            }
            Ok(tid) => {
                outln!("tid:        {tid}");
                outln!("time:       {}", format_micros(tid.timestamp_micros()));
                outln!("micros:     {}", tid.timestamp_micros());
                outln!("clock id:   {}", tid.clock_id());
                if tid.top_bit_set() {
                    outln!(
                        "note:       the top bit is set; valid syntax, but no conforming generator makes this TID"
                    );
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("datarepo: invalid TID {tid:?}: {e}");
                Ok(ExitCode::from(1))
            }
        },
    }
}

/// RFC 3339 in UTC with microseconds, or a note when out of range.
fn format_micros(micros: u64) -> String {
    i64::try_from(micros)
        .ok()
        .and_then(|m| jiff::Timestamp::from_microsecond(m).ok())
        .map_or_else(
            || format!("(beyond the representable date range: {micros} µs)"),
            |ts| format!("{ts:.6}"),
        )
}

/// Validates every input, printing a line each (JSON unless a person reads
/// stdout at a terminal without `--json`); returns the exit code.
fn validate_all<E: std::fmt::Display>(
    args: &ValidateArgs,
    json_mode: bool,
    check: impl Fn(&str) -> Result<Map<String, Value>, E>,
) -> io::Result<ExitCode> {
    use std::io::IsTerminal;
    // JSON lines are what scripts have read from these commands since
    // they were specified, so anything but a terminal keeps getting them.
    let human = !json_mode && io::stdout().is_terminal();
    let mut out = crate::output::Stdout::buffered();
    let mut any_invalid = false;
    let mut usage_error = false;
    let mut report = |raw: &str| -> io::Result<()> {
        let line = match decode_input(raw, args.json_lines) {
            Ok(input) => match check(&input) {
                Ok(extra) => {
                    let mut obj = Map::new();
                    obj.insert("input".into(), input.into());
                    obj.insert("valid".into(), true.into());
                    obj.extend(extra);
                    Value::Object(obj)
                }
                Err(e) => {
                    any_invalid = true;
                    json!({"input": input, "valid": false, "error": e.to_string()})
                }
            },
            Err(e) => {
                usage_error = true;
                json!({"input": raw, "valid": false, "error": e})
            }
        };
        if human {
            writeln!(out, "{}", human_line(&line))
        } else {
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")
        }
    };
    if args.inputs.is_empty() {
        for line in io::stdin().lock().lines() {
            report(&line?)?;
        }
    } else {
        for input in &args.inputs {
            report(input)?;
        }
    }
    out.flush()?;
    Ok(if usage_error {
        ExitCode::from(2)
    } else if any_invalid {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One validation's JSON line as a person reads it: `ok KEY`, with a
/// TID's time and clock id, or `invalid KEY: why` (the input quoted when
/// it would not read plainly).
fn human_line(line: &Value) -> String {
    let input = line["input"].as_str().unwrap_or_default();
    let shown = if input.is_empty() || input.chars().any(|c| c.is_whitespace() || c.is_control()) {
        format!("{input:?}")
    } else {
        input.to_owned()
    };
    if line["valid"] == true {
        match line["timestampUs"].as_u64() {
            Some(micros) => format!(
                "ok       {shown}  {}  clock {}",
                format_micros(micros),
                line["clockId"]
            ),
            None => format!("ok       {shown}"),
        }
    } else {
        format!(
            "invalid  {shown}: {}",
            line["error"].as_str().unwrap_or_default()
        )
    }
}

fn decode_input(raw: &str, json_lines: bool) -> Result<String, String> {
    if !json_lines {
        return Ok(raw.to_owned());
    }
    serde_json::from_str::<String>(raw)
        .map_err(|e| format!("--json-lines input is not a JSON string literal: {e}"))
}
