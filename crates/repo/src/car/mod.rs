//! CAR v1 files: export, import and offline verification.
//!
//! One direction of use: [`read`] reads and checks a file's blocks and
//! commits; [`verify`] and [`import`] build on it; [`export`] writes files
//! and needs neither. [`declarations`] is the block that carries a
//! repository's collections, indexes, Lexicons and keys through a file.

pub(crate) mod declarations;
pub(crate) mod export;
mod file_tree;
pub(crate) mod import;
pub(crate) mod read;
pub(crate) mod verify;
