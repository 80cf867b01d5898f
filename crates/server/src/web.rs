//! The web interface: static files compiled into the binary (no network
//! and no Node.js at build or run time). Every page is the same shell,
//! `index.html`; its script reads the path and draws the view from the
//! XRPC API, so the files themselves hold no data and need no token.

use axum::{
    extract::Path,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};

use crate::error::XrpcError;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
    /// A strong validator: a hash of `bytes`, fixed at compile time.
    etag: &'static str,
}

/// FNV-1a over `bytes`, as 16 hex digits in quotes (an ETag).
const fn etag(bytes: &[u8]) -> [u8; 18] {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    let hex = b"0123456789abcdef";
    let mut out = [b'"'; 18];
    let mut j = 0;
    while j < 16 {
        out[1 + j] = hex[((h >> (60 - 4 * j)) & 0xf) as usize];
        j += 1;
    }
    out
}

macro_rules! asset {
    ($name:literal, $type:expr) => {{
        const BYTES: &[u8] = include_bytes!(concat!("../web/", $name));
        const TAG: [u8; 18] = etag(BYTES);
        Asset {
            name: $name,
            content_type: $type,
            bytes: BYTES,
            etag: match std::str::from_utf8(&TAG) {
                Ok(s) => s,
                Err(_) => panic!("an ETag is ASCII"),
            },
        }
    }};
}

const JS: &str = "text/javascript; charset=utf-8";

static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("dom.js", JS),
    asset!("json.js", JS),
    asset!("views.js", JS),
    asset!("pail.js", JS),
    asset!("edit.js", JS),
    asset!("blobs.js", JS),
    asset!("explore.js", JS),
    asset!("favicon.svg", "image/svg+xml"),
];

/// The page of every view (`/`, `/repo/…`).
pub(crate) async fn page(headers: HeaderMap) -> Response {
    serve(&ASSETS[0], &headers)
}

/// `/ui/{name}`: a script, the style sheet or an icon.
pub(crate) async fn asset(Path(name): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(a) => serve(a, &headers),
        None => XrpcError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("no file {name} in the web interface"),
        )
        .into_response(),
    }
}

fn serve(asset: &Asset, headers: &HeaderMap) -> Response {
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == asset.etag.as_bytes());
    let common = [
        (header::ETAG, HeaderValue::from_static(asset.etag)),
        // Revalidated on every use: a new binary serves new files at the
        // same names.
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
            ),
        ),
    ];
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        common,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        )],
        asset.bytes,
    )
        .into_response()
}
