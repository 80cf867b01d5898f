//! A page of records as `ls` and `query` print it with `--format`: `table`
//! (aligned columns: the record key and the chosen fields, or the first
//! few of the values' own), `csv` (RFC 4180, a header row; arrays and
//! objects as JSON text) or `jsonl` (one `{"uri", "cid", "value"}` per
//! line).

use std::io::{self, Write as _};

use clap::ValueEnum;
use serde_json::Value;

/// How `ls` and `query` print records (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned columns (the default at a terminal).
    Table,
    /// One JSON object per record and line.
    Jsonl,
    /// Comma-separated values with a header row (RFC 4180).
    Csv,
}

/// One record of a page, as shown.
pub(crate) struct Row {
    pub(crate) rkey: String,
    pub(crate) uri: String,
    pub(crate) cid: String,
    /// Its value, cut to `--fields` when given.
    pub(crate) value: Value,
}

/// Prints a page of records as asked: `--format`, else `--json` (exactly
/// listRecords' shape), else a table at a terminal and `rkey  preview`
/// lines elsewhere.
pub(crate) fn show_page(
    json_mode: bool,
    format: Option<Format>,
    rows: &[Row],
    paths: Option<&[String]>,
    cursor: Option<&str>,
) -> io::Result<()> {
    use std::io::IsTerminal as _;
    let format = match format {
        Some(format) => format,
        None if json_mode => {
            let records: Vec<Value> = rows
                .iter()
                .map(|r| serde_json::json!({"uri": r.uri, "cid": r.cid, "value": r.value}))
                .collect();
            let mut page = serde_json::json!({ "records": records });
            if let Some(next) = cursor {
                page["cursor"] = Value::from(next);
            }
            crate::output::outln!("{page}");
            return Ok(());
        }
        None if io::stdout().is_terminal() => Format::Table,
        None => {
            for row in rows {
                crate::output::outln!("{}  {}", row.rkey, preview(&row.value));
            }
            if let Some(next) = cursor {
                crate::output::outln!("(more: --cursor {next})");
            }
            return Ok(());
        }
    };
    print(format, rows, paths, cursor)
}

/// Columns a table shows of values without `--fields`.
const TABLE_FIELDS: usize = 4;

/// Characters a table cell shows before `…`.
const TABLE_CELL_CHARS: usize = 40;

/// Prints `rows` in `format` on stdout; `paths` are the `--fields` (the
/// columns), else the columns are the values' own top-level keys.
/// `cursor` (the next page) goes to stderr, so stdout holds only data.
pub(crate) fn print(
    format: Format,
    rows: &[Row],
    paths: Option<&[String]>,
    cursor: Option<&str>,
) -> io::Result<()> {
    let mut out = crate::output::Stdout::buffered();
    match format {
        Format::Jsonl => {
            for row in rows {
                let line = serde_json::json!({"uri": row.uri, "cid": row.cid, "value": row.value});
                serde_json::to_writer(&mut out, &line)?;
                out.write_all(b"\n")?;
            }
        }
        Format::Csv => {
            let columns = columns(rows, paths, usize::MAX);
            let mut csv = csv::WriterBuilder::new()
                .terminator(csv::Terminator::CRLF)
                .from_writer(&mut out);
            let header = std::iter::once("rkey").chain(columns.iter().map(String::as_str));
            csv.write_record(header).map_err(io::Error::other)?;
            for row in rows {
                let cells = std::iter::once(row.rkey.clone())
                    .chain(columns.iter().map(|c| repo::field_text(&row.value, c)));
                csv.write_record(cells).map_err(io::Error::other)?;
            }
            csv.flush()?;
        }
        Format::Table => {
            let columns = columns(rows, paths, TABLE_FIELDS);
            let mut lines: Vec<Vec<String>> = vec![
                std::iter::once("rkey".to_owned())
                    .chain(columns.iter().cloned())
                    .collect(),
            ];
            for row in rows {
                lines.push(
                    std::iter::once(row.rkey.clone())
                        .chain(columns.iter().map(|c| {
                            let text =
                                repo::field_text(&row.value, c).replace(['\n', '\r', '\t'], " ");
                            truncate(&text, TABLE_CELL_CHARS)
                        }))
                        .collect(),
                );
            }
            let widths: Vec<usize> = (0..=columns.len())
                .map(|i| lines.iter().map(|l| width(&l[i])).max().unwrap_or(0))
                .collect();
            for line in &lines {
                let mut text = String::new();
                for (i, cell) in line.iter().enumerate() {
                    if i + 1 == line.len() {
                        text.push_str(cell);
                    } else {
                        text.push_str(cell);
                        text.push_str(&" ".repeat(widths[i] - width(cell) + 2));
                    }
                }
                writeln!(out, "{}", text.trim_end())?;
            }
        }
    }
    out.flush()?;
    if let Some(next) = cursor {
        eprintln!("(more: --cursor {next})");
    }
    Ok(())
}

/// The columns: `paths`, or the top-level keys of the values (but
/// `$type`) in the order they first appear, at most `limit`.
fn columns(rows: &[Row], paths: Option<&[String]>, limit: usize) -> Vec<String> {
    if let Some(paths) = paths {
        return paths.to_vec();
    }
    let mut seen: Vec<String> = Vec::new();
    for row in rows {
        for key in row.value.as_object().into_iter().flat_map(|o| o.keys()) {
            if key != "$type" && !seen.contains(key) {
                seen.push(key.clone());
            }
        }
    }
    seen.truncate(limit);
    seen
}

/// Columns `s` takes at a terminal.
fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// A line's worth of a record for people: its first few fields, scalar
/// values as JSON and truncated, arrays and objects summarised.
fn preview(value: &Value) -> String {
    const FIELDS: usize = 4;
    const VALUE_CHARS: usize = 40;
    let Some(fields) = value.as_object() else {
        return truncate(&value.to_string(), VALUE_CHARS);
    };
    let shown: Vec<String> = fields
        .iter()
        .filter(|(k, _)| *k != "$type")
        .take(FIELDS)
        .map(|(k, v)| {
            let v = match v {
                Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
                    truncate(&v.to_string(), VALUE_CHARS)
                }
                Value::Array(items) => format!("[{} items]", items.len()),
                Value::Object(o) => format!("{{{} fields}}", o.len()),
                other => truncate(&other.to_string(), VALUE_CHARS),
            };
            format!("{k}={v}")
        })
        .collect();
    let more = fields
        .iter()
        .filter(|(k, _)| *k != "$type")
        .count()
        .saturating_sub(FIELDS);
    let mut line = shown.join("  ");
    if more > 0 {
        line.push_str(&format!("  (+{more} more)"));
    }
    line
}

/// `s` cut to `max` characters, with `…` when cut.
fn truncate(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}
