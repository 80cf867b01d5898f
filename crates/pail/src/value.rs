//! The value of a shard entry: user data, a link to a child shard, or both.

use cid::Cid;

/// The value of a shard entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardValue {
    /// User data: a CID put by a user.
    Data(Cid),
    /// A link to a child shard holding keys that extend this entry's key.
    Link(Cid),
    /// A link to a child shard, and user data for this entry's key itself.
    LinkData {
        /// The child shard.
        link: Cid,
        /// The user data.
        data: Cid,
    },
}

impl ShardValue {
    /// The user data, if any.
    #[must_use]
    pub fn data(&self) -> Option<Cid> {
        match self {
            Self::Data(data) | Self::LinkData { data, .. } => Some(*data),
            Self::Link(_) => None,
        }
    }

    /// The child shard link, if any.
    #[must_use]
    pub fn link(&self) -> Option<Cid> {
        match self {
            Self::Link(link) | Self::LinkData { link, .. } => Some(*link),
            Self::Data(_) => None,
        }
    }
}
