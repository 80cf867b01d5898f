//! [`Blobs`]: the bytes of files records refer to (images, video), kept
//! beside the database as objects, never in the LSM.
//!
//! Layout (`docs/store.md`): `blobs/<cid>` in the store's location (a
//! local directory's `blobs/` folder next to `db/`; the same prefix's
//! `blobs/` on S3), the CID a CIDv1 of codec `raw` (0x55) over the bytes'
//! sha2-256. An upload is written to `blobs/tmp/<name>` while it is hashed,
//! then moved to its CID's name: a crash leaves at most a temporary object,
//! never a partial blob under a CID. Which repository holds which blob is
//! kept in the database, with the commits (`keycodec::records::blob_key`).

use std::{ops::Range, sync::Arc};

use bytes::{Bytes, BytesMut};
use cid::Cid;
use futures::{Stream, StreamExt};
use multihash_codetable::{Code, MultihashDigest as _};
use sha2::{Digest as _, Sha256};
use slatedb::object_store::{
    self, GetOptions, GetRange, ObjectStore, ObjectStoreExt as _, RenameOptions, RenameTargetMode,
    WriteMultipart, path::Path as ObjectPath,
};

/// The `raw` multicodec: a blob's CID codec.
pub const RAW_CODEC: u64 = 0x55;

/// How many leading bytes of an upload are kept for sniffing its type.
pub const SNIFF_BYTES: usize = 8192;

/// The size of each part an upload is written in (bounds its memory).
const PART_BYTES: usize = 5 << 20;

/// Why a blob could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// The body is longer than allowed; nothing was kept.
    #[error("the blob is larger than {max} bytes")]
    TooLarge {
        /// The limit, in bytes.
        max: u64,
    },
    /// The body could not be read to its end (the client went away).
    #[error("the upload was cut off: {0}")]
    Body(String),
    /// No blob with this CID is stored.
    #[error("no blob {0} is stored")]
    NotFound(Cid),
    /// The bytes stored under a CID do not hash to it.
    #[error("the bytes stored as blob {cid} hash to {actual} (damaged)")]
    Damaged {
        /// The CID they are stored under.
        cid: Cid,
        /// The CID of what they are (its string form).
        actual: String,
    },
    /// The object store failed.
    #[error("blob storage: {0}")]
    Store(#[from] object_store::Error),
}

/// A blob just stored: its CID, size, and first bytes (for sniffing its
/// type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    /// CIDv1, `raw`, sha2-256.
    pub cid: Cid,
    /// Its length in bytes.
    pub size: u64,
    /// Its first [`SNIFF_BYTES`] bytes (all of it when shorter).
    pub head: Bytes,
}

/// A stored blob's bytes, or a range of them, as a stream.
pub struct BlobBytes {
    /// The whole blob's length.
    pub size: u64,
    /// The range sent.
    pub range: Range<u64>,
    /// The bytes of `range`.
    pub stream: futures::stream::BoxStream<'static, Result<Bytes, BlobError>>,
}

impl std::fmt::Debug for BlobBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobBytes")
            .field("size", &self.size)
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// A stored object, as [`Blobs::list`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedBlob {
    /// The blob's CID; `None` for an upload's temporary object.
    pub cid: Option<Cid>,
    /// Its length in bytes.
    pub size: u64,
    /// When it was last written (seconds since the Unix epoch).
    pub modified: u64,
    /// The object's name in the store.
    pub location: String,
}

/// The blob CID of `bytes`.
#[must_use]
pub fn blob_cid(bytes: &[u8]) -> Cid {
    Cid::new_v1(RAW_CODEC, Code::Sha2_256.digest(bytes))
}

/// The blobs of a store.
#[derive(Clone)]
pub struct Blobs {
    objects: Arc<dyn ObjectStore>,
    root: ObjectPath,
    /// Where `root` is on disk, for a local store: an upload's bytes are
    /// staged there in files the object store neither lists nor deletes
    /// (`tmp/<name>#<n>`), which a crash leaves behind.
    local_dir: Option<Arc<std::path::PathBuf>>,
}

impl std::fmt::Debug for Blobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blobs")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Default for Blobs {
    fn default() -> Self {
        Self::in_memory()
    }
}

impl Blobs {
    /// The blobs under `root` (`<prefix>/blobs`) of `objects`.
    #[must_use]
    pub fn new(objects: Arc<dyn ObjectStore>, root: ObjectPath) -> Self {
        Self {
            objects,
            root,
            local_dir: None,
        }
    }

    /// These blobs, whose root is the directory `dir` of a local file
    /// system: [`Blobs::list`] then also finds the staging files of
    /// uploads a crash cut off, and [`Blobs::delete_object`] deletes them.
    #[must_use]
    pub fn on_local_disk(mut self, dir: std::path::PathBuf) -> Self {
        self.local_dir = Some(Arc::new(dir));
        self
    }

    /// How the locations of uploads' objects begin: `<root>/tmp/`.
    fn tmp_prefix(&self) -> String {
        if self.root.as_ref().is_empty() {
            "tmp/".to_owned()
        } else {
            format!("{}/tmp/", self.root)
        }
    }

    /// A staging file's path, when `location` names one under `tmp/`.
    fn staging_file(&self, location: &str) -> Option<std::path::PathBuf> {
        let dir = self.local_dir.as_deref()?;
        let name = location
            .strip_prefix(&self.tmp_prefix())
            .filter(|n| n.contains('#') && !n.contains('/') && !n.starts_with('.'))?;
        Some(dir.join("tmp").join(name))
    }

    /// Blobs kept in a local directory, `dir/<cid>`, as a backup keeps
    /// them (`export --blobs DIR`); the directory is created if missing.
    ///
    /// # Errors
    ///
    /// [`BlobError::Store`] when the directory cannot be created.
    pub fn in_directory(dir: &std::path::Path) -> Result<Self, BlobError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            BlobError::Store(object_store::Error::Generic {
                store: "LocalFileSystem",
                source: Box::new(e),
            })
        })?;
        let objects = object_store::local::LocalFileSystem::new_with_prefix(dir)?;
        Ok(Self::new(Arc::new(objects), ObjectPath::from("")).on_local_disk(dir.to_path_buf()))
    }

    /// Blobs in memory (for [`MemoryKv`](crate::MemoryKv) stores).
    #[must_use]
    pub fn in_memory() -> Self {
        Self::new(
            Arc::new(object_store::memory::InMemory::new()),
            ObjectPath::from("blobs"),
        )
    }

    fn path(&self, cid: &Cid) -> ObjectPath {
        self.root.clone().join(cid.to_string().as_str())
    }

    /// Stores `body`, hashing it as it streams (never more of it in memory
    /// than a part being written), under a temporary name made from
    /// `temp_name`, then under its CID. Past `max_bytes` the upload is
    /// abandoned and nothing is kept.
    ///
    /// # Errors
    ///
    /// [`BlobError::TooLarge`], [`BlobError::Body`] when the stream fails,
    /// or [`BlobError::Store`].
    pub async fn put<S, E>(
        &self,
        mut body: S,
        max_bytes: u64,
        temp_name: &str,
    ) -> Result<StoredBlob, BlobError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        if let Some(dir) = &self.local_dir {
            return local::put(dir, body, max_bytes, temp_name).await;
        }
        let temp = self.root.clone().join("tmp").join(temp_name);
        let upload = self.objects.put_multipart(&temp).await?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        let mut head = BytesMut::new();
        let failure = loop {
            let chunk = match body.next().await {
                None => break None,
                Some(Err(e)) => break Some(BlobError::Body(e.to_string())),
                Some(Ok(chunk)) => chunk,
            };
            size += chunk.len() as u64;
            if size > max_bytes {
                break Some(BlobError::TooLarge { max: max_bytes });
            }
            hasher.update(&chunk);
            if head.len() < SNIFF_BYTES {
                let take = (SNIFF_BYTES - head.len()).min(chunk.len());
                head.extend_from_slice(&chunk[..take]);
            }
            if let Err(e) = writer.wait_for_capacity(2).await {
                break Some(e.into());
            }
            writer.put(chunk);
        };
        if let Some(e) = failure {
            let _ = writer.abort().await;
            return Err(e);
        }
        writer.finish().await?;
        let digest = hasher.finalize();
        let cid = Cid::new_v1(
            RAW_CODEC,
            Code::Sha2_256
                .wrap(&digest)
                .map_err(|e| BlobError::Body(e.to_string()))?,
        );
        // The same bytes stored already: the object under the CID is them.
        let moved = self
            .objects
            .rename_opts(
                &temp,
                &self.path(&cid),
                RenameOptions {
                    target_mode: RenameTargetMode::Overwrite,
                    ..RenameOptions::default()
                },
            )
            .await;
        if let Err(e) = moved {
            let _ = self.objects.delete(&temp).await;
            return Err(e.into());
        }
        Ok(StoredBlob {
            cid,
            size,
            head: head.freeze(),
        })
    }

    /// The bytes of blob `cid`, or of `range` of them.
    ///
    /// # Errors
    ///
    /// [`BlobError::NotFound`], or [`BlobError::Store`].
    pub async fn get(&self, cid: &Cid, range: Option<Range<u64>>) -> Result<BlobBytes, BlobError> {
        if let Some(dir) = &self.local_dir {
            return local::get(dir, cid, range).await;
        }
        let options = GetOptions {
            range: range.map(GetRange::Bounded),
            ..GetOptions::default()
        };
        let got = match self.objects.get_opts(&self.path(cid), options).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Err(BlobError::NotFound(*cid)),
            Err(e) => return Err(e.into()),
        };
        let size = got.meta.size;
        let range = got.range.clone();
        let stream = got
            .into_stream()
            .map(|r| r.map_err(BlobError::from))
            .boxed();
        Ok(BlobBytes {
            size,
            range,
            stream,
        })
    }

    /// Copies blob `cid` into `to` (under the temporary name `temp_name`
    /// until it is whole), hashing it on the way: what `to` stored.
    ///
    /// # Errors
    ///
    /// [`BlobError::NotFound`]; [`BlobError::Damaged`] when the bytes do
    /// not hash to `cid` (then `to` keeps nothing under `cid`); or
    /// [`BlobError::Store`].
    pub async fn copy_to(
        &self,
        cid: &Cid,
        to: &Self,
        temp_name: &str,
    ) -> Result<StoredBlob, BlobError> {
        let bytes = self.get(cid, None).await?;
        let stored = to.put(bytes.stream, u64::MAX, temp_name).await?;
        if stored.cid != *cid {
            to.delete(&stored.cid).await?;
            return Err(BlobError::Damaged {
                cid: *cid,
                actual: stored.cid.to_string(),
            });
        }
        Ok(stored)
    }

    /// Reads blob `cid` whole and hashes it: [`BlobError::Damaged`] when
    /// its bytes are not what its CID names.
    ///
    /// # Errors
    ///
    /// [`BlobError::NotFound`], [`BlobError::Damaged`] or
    /// [`BlobError::Store`].
    pub async fn verify(&self, cid: &Cid) -> Result<(), BlobError> {
        let mut bytes = self.get(cid, None).await?;
        let mut hasher = Sha256::new();
        while let Some(chunk) = bytes.stream.next().await {
            hasher.update(&chunk?);
        }
        let actual = Cid::new_v1(
            RAW_CODEC,
            Code::Sha2_256
                .wrap(&hasher.finalize())
                .map_err(|e| BlobError::Body(e.to_string()))?,
        );
        if actual == *cid {
            Ok(())
        } else {
            Err(BlobError::Damaged {
                cid: *cid,
                actual: actual.to_string(),
            })
        }
    }

    /// The length of blob `cid`, if it is stored.
    ///
    /// # Errors
    ///
    /// [`BlobError::Store`].
    pub async fn size(&self, cid: &Cid) -> Result<Option<u64>, BlobError> {
        match self.objects.head(&self.path(cid)).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Every stored object: each blob's CID (or `None` for an upload's
    /// temporary object, or anything else), its size and when it was last
    /// written (seconds since the Unix epoch), with the object's name.
    ///
    /// # Errors
    ///
    /// [`BlobError::Store`].
    pub async fn list(&self) -> Result<Vec<ListedBlob>, BlobError> {
        let mut listed = Vec::new();
        let mut objects = self.objects.list(Some(&self.root));
        while let Some(meta) = objects.next().await {
            let meta = meta?;
            let name = meta.location.filename().unwrap_or_default();
            let in_tmp = meta
                .location
                .prefix_match(&self.root.clone().join("tmp"))
                .is_some();
            listed.push(ListedBlob {
                cid: if in_tmp {
                    None
                } else {
                    Cid::try_from(name).ok()
                },
                size: meta.size,
                modified: u64::try_from(meta.last_modified.timestamp()).unwrap_or(0),
                location: meta.location.to_string(),
            });
        }
        if let Some(dir) = self.local_dir.as_deref()
            && let Ok(entries) = std::fs::read_dir(dir.join("tmp"))
        {
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(meta) = entry.metadata() else { continue };
                if !name.contains('#') || !meta.is_file() {
                    continue;
                }
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs());
                listed.push(ListedBlob {
                    cid: None,
                    size: meta.len(),
                    modified,
                    location: format!("{}{name}", self.tmp_prefix()),
                });
            }
        }
        Ok(listed)
    }

    /// Deletes the object `location` (as [`Blobs::list`] names it).
    ///
    /// # Errors
    ///
    /// [`BlobError::Store`].
    pub async fn delete_object(&self, location: &str) -> Result<(), BlobError> {
        if let Some(file) = self.staging_file(location) {
            return match std::fs::remove_file(&file) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(BlobError::Store(object_store::Error::Generic {
                    store: "LocalFileSystem",
                    source: Box::new(e),
                })),
            };
        }
        match self.objects.delete(&ObjectPath::from(location)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes blob `cid` (nothing when it is absent).
    ///
    /// # Errors
    ///
    /// [`BlobError::Store`].
    pub async fn delete(&self, cid: &Cid) -> Result<(), BlobError> {
        match self.objects.delete(&self.path(cid)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// Blobs on a local disk, read and written through the file system
/// directly: in 1 MiB reads and writes, with one `fdatasync` per upload
/// and one of the directory it is renamed into (the object store layer's
/// local store reads in 8 KiB pieces, each a blocking task, and syncs
/// several times per upload). Same layout, same guarantees: an upload is
/// written under `tmp/` while it is hashed, made durable, then renamed to
/// its CID.
mod local {
    use std::{
        io::{Read as _, Seek as _, Write as _},
        ops::Range,
        path::{Path, PathBuf},
    };

    use bytes::{Bytes, BytesMut};
    use cid::Cid;
    use futures::{Stream, StreamExt};
    use multihash_codetable::{Code, MultihashDigest as _};
    use sha2::{Digest as _, Sha256};

    use super::{BlobBytes, BlobError, RAW_CODEC, SNIFF_BYTES, StoredBlob, object_store};

    /// Bytes read or written at once.
    const IO_BYTES: usize = 1 << 20;

    fn io_error(e: std::io::Error) -> BlobError {
        BlobError::Store(object_store::Error::Generic {
            store: "LocalFileSystem",
            source: Box::new(e),
        })
    }

    async fn blocking<T: Send + 'static>(
        f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
    ) -> Result<T, BlobError> {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| io_error(std::io::Error::other(e)))?
            .map_err(io_error)
    }

    pub(super) async fn put<S, E>(
        dir: &Path,
        mut body: S,
        max_bytes: u64,
        temp_name: &str,
    ) -> Result<StoredBlob, BlobError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        let tmp_dir = dir.join("tmp");
        let temp = tmp_dir.join(temp_name);
        let mut file = {
            let temp = temp.clone();
            blocking(move || {
                std::fs::create_dir_all(&tmp_dir)?;
                std::fs::File::create(&temp)
            })
            .await?
        };
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        let mut head = BytesMut::new();
        let mut pending: Vec<u8> = Vec::with_capacity(IO_BYTES);
        let written: Result<(), BlobError> = async {
            loop {
                let chunk = match body.next().await {
                    None => break,
                    Some(Err(e)) => return Err(BlobError::Body(e.to_string())),
                    Some(Ok(chunk)) => chunk,
                };
                size += chunk.len() as u64;
                if size > max_bytes {
                    return Err(BlobError::TooLarge { max: max_bytes });
                }
                hasher.update(&chunk);
                if head.len() < SNIFF_BYTES {
                    let take = (SNIFF_BYTES - head.len()).min(chunk.len());
                    head.extend_from_slice(&chunk[..take]);
                }
                pending.extend_from_slice(&chunk);
                if pending.len() >= IO_BYTES {
                    (file, pending) = blocking(move || {
                        file.write_all(&pending)?;
                        pending.clear();
                        Ok((file, pending))
                    })
                    .await?;
                }
            }
            blocking(move || {
                file.write_all(&pending)?;
                file.sync_data()
            })
            .await
        }
        .await;
        if let Err(e) = written {
            let temp = temp.clone();
            let _ = blocking(move || std::fs::remove_file(temp)).await;
            return Err(e);
        }
        let cid = Cid::new_v1(
            RAW_CODEC,
            Code::Sha2_256
                .wrap(&hasher.finalize())
                .map_err(|e| BlobError::Body(e.to_string()))?,
        );
        // The same bytes stored already: the file under the CID is them.
        let dest = dir.join(cid.to_string());
        let dir = dir.to_path_buf();
        let moved = {
            let temp = temp.clone();
            blocking(move || {
                std::fs::rename(&temp, &dest)?;
                std::fs::File::open(&dir)?.sync_all()
            })
            .await
        };
        if let Err(e) = moved {
            let _ = blocking(move || std::fs::remove_file(temp)).await;
            return Err(e);
        }
        Ok(StoredBlob {
            cid,
            size,
            head: head.freeze(),
        })
    }

    pub(super) async fn get(
        dir: &Path,
        cid: &Cid,
        range: Option<Range<u64>>,
    ) -> Result<BlobBytes, BlobError> {
        let path: PathBuf = dir.join(cid.to_string());
        let opened = blocking(move || {
            let file = std::fs::File::open(&path)?;
            let len = file.metadata()?.len();
            Ok((file, len))
        })
        .await;
        let (mut file, size) = match opened {
            Ok(opened) => opened,
            Err(BlobError::Store(object_store::Error::Generic { source, .. }))
                if source
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
            {
                return Err(BlobError::NotFound(*cid));
            }
            Err(e) => return Err(e),
        };
        let range = range.map_or(0..size, |r| r.start.min(size)..r.end.min(size));
        let start = range.start;
        file = blocking(move || {
            file.seek(std::io::SeekFrom::Start(start))?;
            Ok(file)
        })
        .await?;
        let stream = futures::stream::unfold(
            (Some(file), range.end - range.start),
            |(file, left)| async move {
                let file = file?;
                if left == 0 {
                    return None;
                }
                let want = usize::try_from(left).map_or(IO_BYTES, |l| l.min(IO_BYTES));
                let read = blocking(move || {
                    let mut buf = vec![0u8; want];
                    let mut file = file;
                    file.read_exact(&mut buf)?;
                    Ok((file, buf))
                })
                .await;
                Some(match read {
                    Ok((file, buf)) => (Ok(Bytes::from(buf)), (Some(file), left - want as u64)),
                    Err(e) => (Err(e), (None, 0)),
                })
            },
        )
        .boxed();
        Ok(BlobBytes {
            size,
            range,
            stream,
        })
    }
}
