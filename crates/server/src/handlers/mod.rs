//! The XRPC endpoints, one module per API family.
//!
//! [`request`] reads requests, [`access`] decides who may do what and
//! runs commits, [`session`] holds what the account and session endpoints
//! share, and [`identity`] makes accounts' DIDs, keys and DID documents;
//! the families build on these and never on each other: [`atproto_repo`]
//! (`com.atproto.repo.*` records), [`atproto_blobs`] (`uploadBlob`,
//! `getBlob`, `listBlobs`), [`atproto_server`] (`com.atproto.server.*`
//! sessions), [`atproto_accounts`] (accounts, invite codes, app
//! passwords), [`atproto_admin`] (the operator's `com.atproto.admin.*`,
//! account status), [`atproto_sync`] (`com.atproto.sync.*`), [`app_bsky`]
//! (`getProfile` only), [`datarepo_query`], [`datarepo_index`] and
//! [`datarepo_schema`] (`dev.datarepo.*`), and [`service`] (health,
//! metrics, fallbacks). The firehose and inspection endpoints live in
//! `crate::firehose` and `crate::inspect`.

pub(crate) mod access;
pub(crate) mod app_bsky;
pub(crate) mod atproto_accounts;
pub(crate) mod atproto_admin;
pub(crate) mod atproto_blobs;
pub(crate) mod atproto_repo;
pub(crate) mod atproto_server;
pub(crate) mod atproto_sync;
pub(crate) mod datarepo_export;
pub(crate) mod datarepo_index;
pub(crate) mod datarepo_query;
pub(crate) mod datarepo_schema;
pub(crate) mod identity;
pub(crate) mod request;
pub(crate) mod service;
pub(crate) mod session;
