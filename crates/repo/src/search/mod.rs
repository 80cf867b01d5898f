//! Field indexes on a [`Repository`](crate::repository::state::Repository):
//! [`build`] (declaring, building beside writers, dropping, rebuilding),
//! [`query`] (queries through the row cache) and [`differences`] (`check`'s
//! index pass). Each adds methods to the repository and imports no sibling.

pub(crate) mod build;
pub(crate) mod differences;
pub(crate) mod query;
pub(crate) mod sorted;
