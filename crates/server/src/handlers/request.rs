//! What every endpoint shares: reading a request (its body, query,
//! CIDs, page limits, bearer token) and the result type.

use axum::{
    body::Bytes,
    extract::{Query, rejection::BytesRejection, rejection::QueryRejection},
    http::{HeaderMap, StatusCode, header},
};
use cid::Cid;
use serde::{Deserialize, de::DeserializeOwned};

use crate::error::XrpcError;

pub(super) type Result<T> = std::result::Result<T, XrpcError>;

pub(super) fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    value
        .strip_prefix(b"Bearer ")
        .or_else(|| value.strip_prefix(b"bearer "))
}

/// The request body's length and its JSON parsed as `T`.
pub(super) fn body<T: DeserializeOwned>(
    body: std::result::Result<Bytes, BytesRejection>,
) -> Result<(T, usize)> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            XrpcError::too_large(format!("the request body is too large: {}", e.body_text()))
        } else {
            XrpcError::invalid(e.body_text())
        }
    })?;
    serde_json::from_slice(&bytes)
        .map(|t| (t, bytes.len()))
        .map_err(|e| XrpcError::invalid(format!("the request body is not valid input: {e}")))
}

pub(crate) fn query<T>(q: std::result::Result<Query<T>, QueryRejection>) -> Result<T> {
    q.map(|Query(t)| t)
        .map_err(|e| XrpcError::invalid(e.body_text()))
}

pub(crate) fn parse_cid(s: &str, field: &str) -> Result<Cid> {
    Cid::try_from(s).map_err(|e| XrpcError::invalid(format!("{field}: {s:?} is not a CID ({e})")))
}

pub(super) fn opt_cid(s: Option<&str>, field: &str) -> Result<Option<Cid>> {
    s.map(|s| parse_cid(s, field)).transpose()
}

pub(super) fn nullable<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// `limit` of a page: 1 to `max`, `default` when absent.
pub(crate) fn page_limit(limit: Option<i64>, default: usize, max: usize) -> Result<usize> {
    match limit {
        None => Ok(default.min(max)),
        Some(n) if n >= 1 && usize::try_from(n).is_ok_and(|n| n <= max) => {
            Ok(usize::try_from(n).unwrap_or(max))
        }
        Some(n) => Err(XrpcError::invalid(format!(
            "limit {n} is out of range (1 to {max})"
        ))),
    }
}

/// A `fields=a,b.c` parameter, checked (`400 InvalidRequest` naming a bad
/// path).
pub(super) fn record_fields(list: Option<&str>) -> Result<Option<repo::RecordFields>> {
    list.filter(|l| !l.trim().is_empty())
        .map(|l| repo::RecordFields::parse(l).map_err(XrpcError::invalid))
        .transpose()
}
