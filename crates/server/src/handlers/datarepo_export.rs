//! `dev.datarepo.exportRecords`: every record a query matches, as a file
//! to download (JSON Lines or CSV), streamed page by page: the server
//! holds one page at a time, never the whole answer.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{Query, State, rejection::QueryRejection},
    http::{HeaderMap, HeaderValue, header},
    response::{IntoResponse, Response},
};
use repo::{QueryPage, RecordFields, Repository, record_uri};
use serde::Deserialize;
use serde_json::json;
use store::Kv;
use tokio::io::AsyncWriteExt;

use super::{
    datarepo_query::{descending, records_page},
    request::{Result, query, record_fields},
};
use crate::{app::App, error::XrpcError};

/// Records per page read for an export.
const EXPORT_PAGE: usize = 500;

#[derive(Deserialize)]
pub(crate) struct ExportRecordsParams {
    repo: String,
    collection: String,
    #[serde(rename = "where")]
    where_: Option<String>,
    fields: Option<String>,
    sort: Option<String>,
    order: Option<String>,
    format: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Jsonl,
    Csv,
}

/// What one export reads: the query, and how its records are written.
struct Export {
    collection: String,
    where_: Option<String>,
    sort: Option<String>,
    descending: bool,
    fields: Option<RecordFields>,
    /// CSV columns after `uri` and `cid`: the chosen paths, else `value`.
    columns: Vec<String>,
    format: Format,
}

impl Export {
    async fn page<K: Kv + 'static>(
        &self,
        app: &App<K>,
        repo: &Repository<K>,
        cursor: Option<&str>,
    ) -> Result<QueryPage> {
        records_page(
            app,
            repo,
            &self.collection,
            self.where_.as_deref(),
            self.sort.as_deref(),
            (self.descending, false),
            cursor,
            EXPORT_PAGE,
        )
        .await
    }

    fn header(&self) -> Vec<u8> {
        match self.format {
            Format::Jsonl => Vec::new(),
            Format::Csv => {
                let names = ["uri", "cid"]
                    .into_iter()
                    .chain(self.columns.iter().map(String::as_str));
                csv_row(names)
            }
        }
    }

    fn rows<K: Kv>(&self, repo: &Repository<K>, page: &QueryPage) -> Vec<u8> {
        let mut out = Vec::new();
        for (rkey, record) in &page.records {
            let uri = record_uri(repo.id(), &self.collection, rkey);
            let cid = record.cid().to_string();
            let value = record.to_json_fields(self.fields.as_ref());
            match self.format {
                Format::Jsonl => {
                    out.extend(
                        json!({"uri": uri, "cid": cid, "value": value})
                            .to_string()
                            .bytes(),
                    );
                    out.push(b'\n');
                }
                Format::Csv => {
                    let cells: Vec<String> = if self.fields.is_some() {
                        self.columns
                            .iter()
                            .map(|c| repo::field_text(&value, c))
                            .collect()
                    } else {
                        vec![value.to_string()]
                    };
                    out.extend(csv_row(
                        [uri.as_str(), cid.as_str()]
                            .into_iter()
                            .chain(cells.iter().map(String::as_str)),
                    ));
                }
            }
        }
        out
    }
}

/// One RFC 4180 record (CRLF-terminated, fields quoted where needed).
fn csv_row<'a>(cells: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    // Writing to memory cannot fail.
    let _ = writer.write_record(cells);
    writer.into_inner().unwrap_or_default()
}

/// `dev.datarepo.exportRecords?repo&collection[&where][&fields][&sort&order]
/// [&format=jsonl|csv]`: the matching records, in the order `queryRecords`
/// pages them, as `application/jsonl` (one `{"uri", "cid", "value"}` per
/// line) or `text/csv` (a header row `uri,cid,<fields>`, else
/// `uri,cid,value` with the record as JSON), as an attachment. The query is
/// checked (and its first page read) before the answer starts, so a bad
/// one is a 400; a failure later ends the file early (logged).
pub(crate) async fn export_records<K: Kv + 'static>(
    State(app): State<Arc<App<K>>>,
    headers: HeaderMap,
    params: std::result::Result<Query<ExportRecordsParams>, QueryRejection>,
) -> Result<Response> {
    app.authorize_read(&headers).await?;
    let p = query(params)?;
    let format = match p.format.as_deref() {
        None | Some("jsonl") => Format::Jsonl,
        Some("csv") => Format::Csv,
        Some(other) => {
            return Err(XrpcError::invalid(format!(
                "format {other:?}: jsonl or csv"
            )));
        }
    };
    let descending = descending(p.order.as_deref())?;
    let fields = record_fields(p.fields.as_deref())?;
    let columns = match &fields {
        Some(_) => p
            .fields
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(|f| f.trim().to_owned())
            .filter(|f| !f.is_empty())
            .collect(),
        None => vec!["value".to_owned()],
    };
    let repo = app.repo(&p.repo).await?;
    let export = Export {
        collection: p.collection.clone(),
        where_: p.where_.filter(|w| !w.trim().is_empty()),
        sort: p.sort,
        descending,
        fields,
        columns,
        format,
    };
    let first = export.page(&app, &repo, None).await?;
    let (mut writer, reader) = tokio::io::duplex(64 * 1024);
    let task_app = Arc::clone(&app);
    tokio::spawn(async move {
        let mut page = first;
        let mut chunk = export.header();
        loop {
            chunk.extend(export.rows(&repo, &page));
            if writer.write_all(&chunk).await.is_err() {
                return; // the client went away
            }
            chunk.clear();
            let Some(cursor) = page.cursor.take() else {
                break;
            };
            page = match export.page(&task_app, &repo, Some(&cursor)).await {
                Ok(next) => next,
                Err(e) => {
                    tracing::warn!(error = ?e, "an export stopped early");
                    return;
                }
            };
        }
        let _ = writer.shutdown().await;
    });
    let (mime, extension) = match format {
        Format::Jsonl => ("application/jsonl; charset=utf-8", "jsonl"),
        Format::Csv => ("text/csv; charset=utf-8", "csv"),
    };
    let disposition = format!(
        "attachment; filename=\"{}.{extension}\"",
        p.collection
            .replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', "_")
    );
    let mut response = Body::from_stream(tokio_util::io::ReaderStream::new(reader)).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(response)
}
