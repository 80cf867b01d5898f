//! [`Location`]: where a database lives, and the object store that
//! reaches it.

use std::{path::Path, sync::Arc};

use slatedb::object_store::{
    self, ObjectStore, PutMode, PutOptions, PutPayload, RetryConfig, UpdateVersion,
    aws::AmazonS3Builder, local::LocalFileSystem, path::Path as ObjectPath,
};

use crate::error::Error;

/// The database's path inside a location (a local directory or an S3 prefix).
pub(crate) const DB_PATH: &str = "db";

/// The object (or prefix) `name` beside the database at `db_path`:
/// `prefix/db` → `prefix/name`.
pub(crate) fn beside_database(db_path: &str, name: &str) -> ObjectPath {
    match db_path.trim_end_matches('/').rsplit_once('/') {
        Some((prefix, _)) => ObjectPath::from(format!("{prefix}/{name}")),
        None => ObjectPath::from(name),
    }
}

/// Writes `body` at `path` only if `mode`'s condition holds (absent, or at
/// a version): the new version, or `None` when the condition did not hold
/// (another process wrote first).
///
/// # Errors
///
/// [`Error::Unavailable`] when the object store fails or cannot write
/// conditionally.
pub(crate) async fn put_if(
    store: &dyn ObjectStore,
    path: &ObjectPath,
    body: Vec<u8>,
    mode: PutMode,
) -> Result<Option<UpdateVersion>, Error> {
    let options = PutOptions {
        mode,
        ..PutOptions::default()
    };
    match store.put_opts(path, PutPayload::from(body), options).await {
        Ok(put) => Ok(Some(UpdateVersion {
            e_tag: put.e_tag,
            version: put.version,
        })),
        Err(
            object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. },
        ) => Ok(None),
        Err(e) => Err(Error::Unavailable(Box::new(e))),
    }
}

/// Where a database lives: a local directory or an S3-compatible bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A local directory (created if missing).
    Local(std::path::PathBuf),
    /// `s3://bucket/prefix`: endpoint, region, credentials and plain-HTTP
    /// permission come from the standard `AWS_*` environment variables
    /// (`AWS_ENDPOINT`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP`); addressing is path-style.
    S3 {
        /// The bucket.
        bucket: String,
        /// The path of the database inside the bucket (may be empty).
        prefix: String,
    },
}

impl std::str::FromStr for Location {
    type Err = Error;

    /// `s3://bucket[/prefix]`, `file:///path`, or a plain path.
    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = |reason: &str| Error::Location {
            location: s.to_owned(),
            reason: reason.to_owned(),
        };
        if let Some(rest) = s.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(invalid("no bucket name after s3://"));
            }
            return Ok(Self::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.trim_matches('/').to_owned(),
            });
        }
        if let Some(path) = s.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(invalid(
                    "a file:// URL needs an absolute path (file:///...)",
                ));
            }
            return Ok(Self::Local(path.into()));
        }
        if s.contains("://") {
            return Err(invalid(
                "unsupported scheme (use a path, file:///path or s3://bucket/prefix)",
            ));
        }
        if s.is_empty() {
            return Err(invalid("empty location"));
        }
        Ok(Self::Local(s.into()))
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// How long opening a database on S3-compatible storage waits for the
/// object store to answer a first listing of the database's prefix.
pub const S3_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The object store at `location` and the database's path in it. On S3 the
/// store must first answer a listing: SlateDB retries a failing object store
/// without end, so an unreachable endpoint, a missing bucket or bad
/// credentials would otherwise hang every command instead of failing it.
/// Whether a file can be written in `dir` now: creates one, writes and
/// syncs a few KiB (so that a full disk shows), and removes it.
///
/// # Errors
///
/// The I/O error that says why not (`StorageFull`, `ReadOnlyFilesystem`,
/// `PermissionDenied`, ...).
pub(crate) fn probe_writable(dir: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let path = dir.join(format!(".datarepo-write-probe-{}", std::process::id()));
    let written = std::fs::File::create(&path).and_then(|mut f| {
        f.write_all(&[0; 8192])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&path);
    written
}

pub(crate) async fn object_store(
    location: &Location,
) -> Result<(String, Arc<dyn ObjectStore>), Error> {
    let invalid = |reason: String| Error::Location {
        location: location.to_string(),
        reason,
    };
    match location {
        Location::Local(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| invalid(e.to_string()))?;
            // fsync files and their directories, so that an acknowledged
            // write survives power loss.
            let store = LocalFileSystem::new_with_prefix(dir)
                .map_err(|e| invalid(e.to_string()))?
                .with_fsync(true);
            Ok((
                DB_PATH.to_owned(),
                Arc::new(super::local_reads::LocalReads::new(store)),
            ))
        }
        Location::S3 { bucket, prefix } => {
            let s3 = |retry: RetryConfig| {
                AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_virtual_hosted_style_request(false)
                    .with_retry(retry)
                    .build()
                    .map_err(|e| invalid(e.to_string()))
            };
            let path = if prefix.is_empty() {
                DB_PATH.to_owned()
            } else {
                format!("{prefix}/{DB_PATH}")
            };
            // The probe gives up after two retries; the store SlateDB gets
            // keeps object_store's default retries.
            let probe = s3(RetryConfig {
                max_retries: 2,
                retry_timeout: S3_PROBE_TIMEOUT,
                ..RetryConfig::default()
            })?;
            let db_prefix = ObjectPath::from(path.as_str());
            let listing = probe.list_with_delimiter(Some(&db_prefix));
            let reason = match tokio::time::timeout(S3_PROBE_TIMEOUT, listing).await {
                Ok(Ok(_)) => return Ok((path, Arc::new(s3(RetryConfig::default())?))),
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {} s", S3_PROBE_TIMEOUT.as_secs()),
            };
            Err(invalid(format!(
                "the object store did not answer a listing ({reason}); check AWS_ENDPOINT, \
                 AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, that the bucket exists, \
                 and AWS_ALLOW_HTTP=true for an http:// endpoint"
            )))
        }
    }
}
