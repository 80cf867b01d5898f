//! The bytes all request bodies in flight may hold together.

use std::sync::Arc;

use tokio::sync::Semaphore;

/// Bytes of request bodies that may be in flight together.
#[derive(Debug)]
pub(crate) struct BodyBudget {
    pub(crate) bytes: Arc<Semaphore>,
    /// The budget, in the semaphore's units (bytes, at most `u32::MAX`).
    pub(crate) total: u32,
}

impl BodyBudget {
    /// A budget of `bytes`, at least one largest body (so that every
    /// admissible body can be admitted when nothing else is in flight).
    pub(crate) fn new(bytes: usize, max_body_bytes: usize) -> Self {
        let total = u32::try_from(bytes.max(max_body_bytes).max(1)).unwrap_or(u32::MAX);
        Self {
            bytes: Arc::new(Semaphore::new(total as usize)),
            total,
        }
    }
}
