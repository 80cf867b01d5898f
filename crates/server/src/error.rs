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
}

impl XrpcError {
    pub(crate) fn new(status: StatusCode, error: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            error,
            message: message.into(),
        }
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
        (
            self.status,
            Json(json!({ "error": self.error, "message": self.message })),
        )
            .into_response()
    }
}

impl From<repo::Error> for XrpcError {
    fn from(e: repo::Error) -> Self {
        use repo::Error as E;
        let message = e.to_string();
        match e {
            E::RecordNotFound(_) => Self::new(StatusCode::BAD_REQUEST, "RecordNotFound", message),
            E::RepoNotFound(_) => Self::new(StatusCode::BAD_REQUEST, "RepoNotFound", message),
            E::InvalidSwap { .. } => Self::new(StatusCode::BAD_REQUEST, "InvalidSwap", message),
            E::LexiconValidation(_) => Self::new(StatusCode::BAD_REQUEST, "InvalidRecord", message),
            E::RevNotFound { .. } => Self::new(StatusCode::BAD_REQUEST, "InvalidRequest", message),
            E::LexiconNotFound(_) => Self::new(StatusCode::BAD_REQUEST, "LexiconNotFound", message),
            E::InvalidRepoId { .. }
            | E::Syntax(_)
            | E::InvalidRecord(_)
            | E::InvalidLexicon(_)
            | E::KeyTypeConflict { .. }
            | E::RecordExists(_)
            | E::RepoExists(_)
            | E::InvalidQuery(_)
            | E::IndexExists { .. }
            | E::IndexNotFound { .. }
            | E::InvalidCar(_) => Self::invalid(message),
            // An import's rebuild runs (or was interrupted): queries resume
            // when it ends.
            E::IndexRebuildPending(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                message,
            ),
            E::Store(store::Error::DurabilityBlocked { .. } | store::Error::NotWritable { .. }) => {
                tracing::error!(error = %message, "the store cannot be written");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    message,
                )
            }
            E::Store(store::Error::DurabilityTimeout(_) | store::Error::Unavailable(_)) => {
                tracing::warn!(error = %message, "write not confirmed");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    message,
                )
            }
            // Another writer opened the store: this server cannot write
            // again, and the operator must act (not a bug in a request).
            E::Store(store::Error::Fenced) => {
                tracing::error!(error = %message, "writes fenced");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailable",
                    message,
                )
            }
            E::Store(store::Error::Conflict(_)) => Self::new(
                StatusCode::CONFLICT,
                "Conflict",
                format!("{message}; retry"),
            ),
            E::Store(store::Error::ReadOnly) => Self::new(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                "this server is a read-only replica; send writes to the writer",
            ),
            _ => {
                tracing::error!(error = %message, "request failed");
                Self::internal(message)
            }
        }
    }
}
