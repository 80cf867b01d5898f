//! What a server is to its store, which can change while it runs: the
//! writer, a standby that may take over, or a read-only replica.
//!
//! A writer holding a lease (a store on shared object storage) takes
//! writes only until its lease lapses: past [`Roles::acknowledge_until`]
//! no procedure answers success (`crate::observe` turns it into `503
//! LeaseLost`), so once a standby may take the lease over this process
//! acknowledges nothing more.

use std::sync::RwLock;

use tokio::time::Instant;

/// What this server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// It takes writes.
    Writer,
    /// It serves reads and waits to take over; writes are refused, naming
    /// the writer's address when its lease says it.
    Standby {
        /// The writer's base URL, from its lease.
        writer: Option<String>,
    },
    /// It serves reads only (`serve --replica`).
    Replica,
}

impl Role {
    /// The name `/xrpc/_health` gives it.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Writer => "writer",
            Self::Standby { .. } => "standby",
            Self::Replica => "replica",
        }
    }
}

/// A server's role, shared by its requests and whoever changes it.
#[derive(Debug)]
pub struct Roles {
    state: RwLock<State>,
}

#[derive(Debug, Clone)]
struct State {
    role: Role,
    /// When a writer's lease lapses unless renewed (`None`: no lease).
    acknowledge_until: Option<Instant>,
}

impl Roles {
    /// A server that is `role`.
    #[must_use]
    pub fn new(role: Role) -> Self {
        Self {
            state: RwLock::new(State {
                role,
                acknowledge_until: None,
            }),
        }
    }

    fn read(&self) -> State {
        self.state
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn change(&self, f: impl FnOnce(&mut State)) {
        f(&mut self
            .state
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    /// The role now.
    #[must_use]
    pub fn role(&self) -> Role {
        self.read().role
    }

    /// Makes the server `role`.
    pub fn set(&self, role: Role) {
        self.change(|s| s.role = role);
    }

    /// A writer's lease holds until `until` (its last renewal's start plus
    /// the lease's time to live, less a margin); it acknowledges nothing
    /// after it.
    pub fn acknowledge_until(&self, until: Instant) {
        self.change(|s| s.acknowledge_until = Some(until));
    }

    /// Whether a write may be acknowledged now: the server is the writer
    /// and its lease, if it has one, has not lapsed.
    #[must_use]
    pub fn may_acknowledge(&self) -> bool {
        let state = self.read();
        state.role == Role::Writer && state.acknowledge_until.is_none_or(|t| Instant::now() < t)
    }
}

/// The header naming the writer's address on a standby's refusal.
pub const WRITER_HEADER: &str = "datarepo-writer";

/// Why a server that is not (or no longer) the writer refuses a write.
pub(crate) fn not_acknowledged(role: &Role) -> crate::error::XrpcError {
    use crate::error::XrpcError;
    use axum::http::{HeaderName, StatusCode, header::RETRY_AFTER};
    match role {
        Role::Replica => {
            XrpcError::invalid("this server is a read-only replica; send writes to the writer")
        }
        Role::Standby { writer } => {
            let mut error = XrpcError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "NotWriter",
                match writer {
                    Some(address) => format!(
                        "this server is a standby; the writer is at {address} (header {WRITER_HEADER})"
                    ),
                    None => "this server is a standby and no writer holds the lease; retry shortly"
                        .to_owned(),
                },
            )
            .with_header(RETRY_AFTER, "1".to_owned());
            if let Some(address) = writer {
                error = error.with_header(HeaderName::from_static(WRITER_HEADER), address.clone());
            }
            error
        }
        Role::Writer => XrpcError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "LeaseLost",
            "this server's writer lease has lapsed, so it acknowledges no more writes \
             (a standby may be the writer now); the outcome of this request is unknown: \
             read it back from the writer",
        )
        .with_header(RETRY_AFTER, "1".to_owned()),
    }
}
