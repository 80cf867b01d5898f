//! XRPC errors: an HTTP status and `{"error": Name, "message": ...}`.

use axum::{
    Json,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde_json::json;

/// An error as XRPC clients expect it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XrpcError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The error name (`InvalidRequest`, `RecordNotFound`, ...).
    pub error: &'static str,
    /// What went wrong, for a person.
    pub message: String,
    /// Headers the answer carries besides (`Retry-After`, ...).
    pub headers: Vec<(axum::http::HeaderName, String)>,
}

impl XrpcError {
    pub(crate) fn new(status: StatusCode, error: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            error,
            message: message.into(),
            headers: Vec::new(),
        }
    }

    /// The error, answered with header `name: value` too.
    #[must_use]
    pub(crate) fn with_header(mut self, name: axum::http::HeaderName, value: String) -> Self {
        self.headers.push((name, value));
        self
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "InvalidRequest", message)
    }

    pub(crate) fn auth(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "AuthRequired", message)
    }

    pub(crate) fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "PayloadTooLarge", message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            message,
        )
    }
}

impl IntoResponse for XrpcError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(json!({ "error": self.error, "message": self.message })),
        )
            .into_response();
        for (name, value) in self.headers {
            if let Ok(value) = axum::http::HeaderValue::try_from(value) {
                response.headers_mut().append(name, value);
            }
        }
        response
    }
}

impl From<repo::Error> for XrpcError {
    fn from(e: repo::Error) -> Self {
        use repo::Error as E;
        let name = e.xrpc_name();
        let message = e.to_string();
        let status = match &e {
            E::IndexRebuildPending(_) => StatusCode::SERVICE_UNAVAILABLE,
            // The operator must act (a full disk, another writer), not the
            // client: said at error level.
            E::Store(
                store::Error::DurabilityBlocked { .. }
                | store::Error::NotWritable { .. }
                | store::Error::Fenced,
            ) => {
                tracing::error!(error = %message, "the store cannot be written");
                StatusCode::SERVICE_UNAVAILABLE
            }
            E::Store(store::Error::DurabilityTimeout(_) | store::Error::Unavailable(_)) => {
                tracing::warn!(error = %message, "write not confirmed");
                StatusCode::SERVICE_UNAVAILABLE
            }
            E::Store(store::Error::Conflict(_)) => {
                return Self::new(StatusCode::CONFLICT, name, format!("{message}; retry"));
            }
            E::Store(store::Error::ReadOnly) => {
                return Self::new(
                    StatusCode::BAD_REQUEST,
                    name,
                    "this server is a read-only replica; send writes to the writer",
                );
            }
            _ if name == "InternalServerError" => {
                tracing::error!(error = %message, "request failed");
                StatusCode::INTERNAL_SERVER_ERROR
            }
            _ => StatusCode::BAD_REQUEST,
        };
        Self::new(status, name, message)
    }
}
