//! What a query answers besides records: top values and stats.

use crate::values::Keyword;

/// `--top`: one value and how many matching records have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopValue {
    /// The value.
    pub value: Keyword,
    /// Matching records with it.
    pub count: u64,
}

/// `--stats`: over the indexed values of the matching records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Values (a record with several contributes each).
    pub count: u64,
    /// Their exact sum.
    pub sum: i128,
    /// The smallest, absent when `count` is 0.
    pub min: Option<i64>,
    /// The largest, absent when `count` is 0.
    pub max: Option<i64>,
}
