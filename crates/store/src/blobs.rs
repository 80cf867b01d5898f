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
    local_dir: Option<Arc<local::LocalDir>>,
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
        self.local_dir = Some(Arc::new(local::LocalDir::new(dir)));
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
        let dir = &self.local_dir.as_deref()?.path;
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
            return local::get(&dir.path, cid, range).await;
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
            && let Ok(entries) = std::fs::read_dir(dir.path.join("tmp"))
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
/// directly: in 1 MiB reads, and writes of up to 1 MiB straight from the
/// buffers a body arrives in, with one `fdatasync` per upload and syncs of
/// the directory it is renamed into shared by the uploads renamed together
/// (the object store layer's local store reads in 8 KiB pieces, each a
/// blocking task, and syncs several times per upload). Same layout, same
/// guarantees: an upload is written under `tmp/` while it is hashed, made
/// durable, then renamed to its CID, and answered once the directory's
/// entry is durable too.
mod local {
    use std::{
        io::{IoSlice, Read as _, Seek as _, Write as _},
        ops::Range,
        path::{Path, PathBuf},
        sync::Arc,
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

    /// A local directory of blobs.
    pub(super) struct LocalDir {
        pub(super) path: PathBuf,
        /// Syncs of `path`, shared by the uploads moved into it.
        syncs: DirSyncs,
    }

    impl LocalDir {
        pub(super) fn new(path: PathBuf) -> Self {
            Self {
                path,
                syncs: DirSyncs::default(),
            }
        }
    }

    /// Syncs of one directory shared by the uploads that renamed a file
    /// into it (group commit for directory entries): a rename is durable
    /// once a sync of the directory that began after it has finished, so
    /// uploads finishing together wait on one sync rather than each making
    /// its own. Used from blocking tasks.
    #[derive(Default)]
    struct DirSyncs {
        state: std::sync::Mutex<SyncState>,
        finished: std::sync::Condvar,
    }

    #[derive(Default)]
    struct SyncState {
        /// Renames made (each counted once it has returned).
        renamed: u64,
        /// Renames up to this count are durable.
        synced: u64,
        /// Whether a sync is under way.
        syncing: bool,
    }

    impl DirSyncs {
        /// Waits until the rename just made into `dir` is durable: by a
        /// sync another upload started after it, or by one made here.
        fn renamed(&self, dir: &Path) -> std::io::Result<()> {
            self.after_rename(|| std::fs::File::open(dir).and_then(|d| d.sync_all()))
        }

        /// [`DirSyncs::renamed`], syncing with `sync`.
        fn after_rename(&self, sync: impl Fn() -> std::io::Result<()>) -> std::io::Result<()> {
            let lock = || {
                self.state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            };
            let mut state = lock();
            state.renamed += 1;
            let ticket = state.renamed;
            loop {
                if state.synced >= ticket {
                    return Ok(());
                }
                if state.syncing {
                    state = self
                        .finished
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    continue;
                }
                state.syncing = true;
                let upto = state.renamed;
                drop(state);
                let synced = sync();
                state = lock();
                state.syncing = false;
                if synced.is_ok() {
                    state.synced = state.synced.max(upto);
                }
                self.finished.notify_all();
                // A failed sync fails this upload; the others waiting try
                // their own.
                synced?;
            }
        }
    }

    /// Chunks of a body held before they are written: at most this many
    /// (one vectored write; also bounds a body of many tiny chunks).
    const MAX_CHUNKS: usize = 1024;

    /// Creates the staging file `temp` in `tmp_dir`, creating the folder
    /// the first time.
    fn create(tmp_dir: &Path, temp: &Path) -> std::io::Result<std::fs::File> {
        match std::fs::File::create(temp) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(tmp_dir)?;
                std::fs::File::create(temp)
            }
            created => created,
        }
    }

    /// Writes `chunks` to `file` in vectored writes, straight from the
    /// buffers the body arrived in.
    fn write_chunks(file: &mut std::fs::File, chunks: &[Bytes]) -> std::io::Result<()> {
        let mut slices: Vec<IoSlice<'_>> = chunks.iter().map(|c| IoSlice::new(c)).collect();
        let mut left = &mut slices[..];
        while !left.is_empty() {
            match file.write_vectored(left) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut left, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Removes an upload's staging file after a failure, if it is there
    /// (what cannot be removed, a crash leaves too: the collector's).
    async fn remove_staged(temp: PathBuf) {
        let _ = blocking(move || match std::fs::remove_file(temp) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            removed => removed,
        })
        .await;
    }

    /// Stores `body` as `dir/<cid>`: written under `dir/tmp/<temp_name>`
    /// while it is hashed, in writes of [`IO_BYTES`] as it arrives, then
    /// synced, moved to its CID's name and the directory synced. A body
    /// smaller than one write (most images) is created, written, synced
    /// and moved in one blocking task once it has all arrived.
    pub(super) async fn put<S, E>(
        local: &Arc<LocalDir>,
        mut body: S,
        max_bytes: u64,
        temp_name: &str,
    ) -> Result<StoredBlob, BlobError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin + Send,
        E: std::fmt::Display,
    {
        let dir = local.path.as_path();
        let tmp_dir = dir.join("tmp");
        let temp = tmp_dir.join(temp_name);
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        let mut head = BytesMut::new();
        let mut pending: Vec<Bytes> = Vec::new();
        let mut pending_bytes = 0;
        let mut file: Option<std::fs::File> = None;
        // Whether the staging file may exist (a failed write may leave it).
        let mut staged = false;
        let received: Result<(), BlobError> = async {
            loop {
                let chunk = match body.next().await {
                    None => return Ok(()),
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
                pending_bytes += chunk.len();
                pending.push(chunk);
                if pending_bytes >= IO_BYTES || pending.len() >= MAX_CHUNKS {
                    let chunks = std::mem::take(&mut pending);
                    pending_bytes = 0;
                    let (opened, tmp_dir, temp) = (file.take(), tmp_dir.clone(), temp.clone());
                    staged = true;
                    file = Some(
                        blocking(move || {
                            let mut file = opened.map_or_else(|| create(&tmp_dir, &temp), Ok)?;
                            write_chunks(&mut file, &chunks)?;
                            Ok(file)
                        })
                        .await?,
                    );
                }
            }
        }
        .await;
        let cid = received.and_then(|()| {
            Ok(Cid::new_v1(
                RAW_CODEC,
                Code::Sha2_256
                    .wrap(&hasher.finalize())
                    .map_err(|e| BlobError::Body(e.to_string()))?,
            ))
        });
        let cid = match cid {
            Ok(cid) => cid,
            Err(e) => {
                drop(file);
                if staged {
                    remove_staged(temp).await;
                }
                return Err(e);
            }
        };
        // The same bytes stored already: the file under the CID is them.
        let dest = dir.join(cid.to_string());
        let local = Arc::clone(local);
        let stored = {
            let temp = temp.clone();
            blocking(move || {
                let mut file = file.map_or_else(|| create(&tmp_dir, &temp), Ok)?;
                write_chunks(&mut file, &pending)?;
                file.sync_data()?;
                drop(file);
                std::fs::rename(&temp, &dest)?;
                local.syncs.renamed(&local.path)
            })
            .await
        };
        if let Err(e) = stored {
            remove_staged(temp).await;
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

    #[cfg(test)]
    mod tests {
        use std::sync::{
            Arc, Barrier,
            atomic::{AtomicU64, Ordering},
        };

        use super::DirSyncs;

        /// Threads that each rename (a count) and then wait on
        /// [`DirSyncs::after_rename`] with `sync`, which is given the
        /// renames made when it begins; per thread, its rename's number,
        /// what `after_rename` returned and `durable` read right after.
        fn rename_together(
            threads: u64,
            durable: &Arc<AtomicU64>,
            sync: impl Fn(u64) -> std::io::Result<()> + Send + Sync + 'static,
        ) -> Vec<(u64, std::io::Result<()>, u64)> {
            let syncs = Arc::new(DirSyncs::default());
            let renames = Arc::new(AtomicU64::new(0));
            let sync = Arc::new(sync);
            let start = Arc::new(Barrier::new(usize::try_from(threads).unwrap()));
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    let (syncs, renames, sync, start, durable) = (
                        Arc::clone(&syncs),
                        Arc::clone(&renames),
                        Arc::clone(&sync),
                        Arc::clone(&start),
                        Arc::clone(durable),
                    );
                    std::thread::spawn(move || {
                        start.wait();
                        // Renames arriving one by one, some while a sync is
                        // under way.
                        std::thread::sleep(std::time::Duration::from_millis(i));
                        let mine = renames.fetch_add(1, Ordering::SeqCst) + 1;
                        let got = syncs.after_rename(|| sync(renames.load(Ordering::SeqCst)));
                        (mine, got, durable.load(Ordering::SeqCst))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        }

        #[test]
        fn a_rename_waits_for_a_sync_begun_after_it_and_syncs_are_shared() {
            // Each sync records how many renames had been made when it
            // began, once it has finished.
            let durable = Arc::new(AtomicU64::new(0));
            let made = Arc::new(AtomicU64::new(0));
            let (d, m) = (Arc::clone(&durable), Arc::clone(&made));
            let results = rename_together(16, &durable, move |renamed_at_start| {
                m.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(20));
                d.fetch_max(renamed_at_start, Ordering::SeqCst);
                Ok(())
            });
            for (mine, got, durable_then) in &results {
                got.as_ref().unwrap();
                assert!(
                    durable_then >= mine,
                    "rename {mine} returned when renames up to {durable_then} were synced"
                );
            }
            let made = made.load(Ordering::SeqCst);
            assert!(
                (1..16).contains(&made),
                "16 renames together made {made} syncs"
            );
        }

        #[test]
        fn a_failed_sync_fails_its_maker_alone() {
            let calls = Arc::new(AtomicU64::new(0));
            let c = Arc::clone(&calls);
            let results = rename_together(8, &Arc::new(AtomicU64::new(0)), move |_| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                if c.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(std::io::Error::other("the disk is gone"))
                } else {
                    Ok(())
                }
            });
            let failed = results.iter().filter(|(_, got, _)| got.is_err()).count();
            assert_eq!(failed, 1);
        }
    }
}
