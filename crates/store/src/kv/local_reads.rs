//! [`LocalReads`]: a local store's object store, reading SST files through
//! descriptors kept open.
//!
//! SlateDB reads an SST block as a ranged `get_opts`. `object_store`'s
//! local file system answers each with a blocking task that opens the file
//! and reads its metadata, and a second that reads the range and closes
//! it: four system calls and two thread hand-offs for a 4 KiB block, which
//! a page of records never read before pays ~90 times. An SST file never
//! changes once it has its name (SlateDB writes each id once, and the
//! local file system makes a file visible under its name only when it is
//! whole), so here a ranged read of one is a single positioned read
//! (`pread`) of a descriptor kept open, in one blocking task, or, when the
//! page cache holds the whole range, on the calling thread without
//! blocking. Every other call goes to the local file system as it is.

use std::{
    collections::HashMap,
    fmt,
    fs::File,
    ops::Range,
    path::PathBuf,
    sync::{Arc, Mutex},
};

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, stream::BoxStream};
use slatedb::object_store::{
    self, CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, RenameOptions, local::LocalFileSystem, path::Path,
};

/// How many SST files a store keeps open for reading. A descriptor keeps
/// its file's bytes on disk after a garbage collection deletes it, until it
/// is closed; this bounds how many such files there can be.
const OPEN_FILES: usize = 256;

/// A local directory's object store whose ranged reads of SST files use
/// descriptors kept open (at most [`OPEN_FILES`], the least recently used
/// closed first).
pub(crate) struct LocalReads {
    inner: Arc<LocalFileSystem>,
    open: Arc<Mutex<OpenFiles>>,
}

/// An SST file open for reading, and its metadata as of its opening (which
/// cannot change: the file is immutable).
struct OpenSst {
    file: File,
    meta: ObjectMeta,
}

#[derive(Default)]
struct OpenFiles {
    files: HashMap<Path, (Arc<OpenSst>, u64)>,
    /// A counter of uses, for least-recently-used eviction.
    clock: u64,
}

impl OpenFiles {
    fn get(&mut self, location: &Path) -> Option<Arc<OpenSst>> {
        self.clock += 1;
        let clock = self.clock;
        self.files.get_mut(location).map(|(sst, used)| {
            *used = clock;
            Arc::clone(sst)
        })
    }

    fn insert(&mut self, location: Path, sst: Arc<OpenSst>) {
        if self.files.len() >= OPEN_FILES
            && let Some(oldest) = self
                .files
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(location, _)| location.clone())
        {
            self.files.remove(&oldest);
        }
        self.clock += 1;
        self.files.insert(location, (sst, self.clock));
    }

    fn forget(&mut self, location: &Path) {
        self.files.remove(location);
    }
}

impl LocalReads {
    pub(crate) fn new(inner: LocalFileSystem) -> Self {
        Self {
            inner: Arc::new(inner),
            open: Arc::default(),
        }
    }

    fn forget(&self, location: &Path) {
        lock(&self.open).forget(location);
    }

    /// Bytes `range` of SST file `location`: from the page cache on the
    /// calling thread when the file is open and the bytes are all cached
    /// ([`read_cached`]: it never waits for the disk), else in one
    /// blocking task.
    async fn read_sst(&self, location: &Path, range: GetRange) -> object_store::Result<GetResult> {
        let open_now = lock(&self.open).get(location);
        if let Some(sst) = open_now
            && let Ok(range) = range.as_range(sst.meta.size)
            && let Some(bytes) = read_cached(&sst.file, &range)
        {
            return Ok(range_result(bytes, sst.meta.clone(), range));
        }
        let location = location.clone();
        let path = self.inner.path_to_filesystem(&location)?;
        let open = Arc::clone(&self.open);
        tokio::task::spawn_blocking(move || {
            let sst = open_sst(&open, &location, path)?;
            let range = range.as_range(sst.meta.size).map_err(generic)?;
            let bytes = read_at(&sst.file, &range).map_err(generic)?;
            Ok(range_result(bytes, sst.meta.clone(), range))
        })
        .await
        .map_err(generic)?
    }
}

fn generic(source: impl std::error::Error + Send + Sync + 'static) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalFileSystem",
        source: Box::new(source),
    }
}

/// The open files (a panic while they were held leaves them usable: no
/// change to them is left half made).
fn lock(open: &Mutex<OpenFiles>) -> std::sync::MutexGuard<'_, OpenFiles> {
    open.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// SST file `location` (at `path`), opened now unless it is open already.
fn open_sst(
    open: &Mutex<OpenFiles>,
    location: &Path,
    path: PathBuf,
) -> object_store::Result<Arc<OpenSst>> {
    if let Some(sst) = lock(open).get(location) {
        return Ok(sst);
    }
    let not_found = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => object_store::Error::NotFound {
            path: path.display().to_string(),
            source: Box::new(source),
        },
        _ => generic(source),
    };
    let file = File::open(&path).map_err(not_found)?;
    let metadata = file.metadata().map_err(not_found)?;
    if metadata.is_dir() {
        return Err(not_found(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "is a directory",
        )));
    }
    let sst = Arc::new(OpenSst {
        meta: object_meta(location.clone(), &metadata),
        file,
    });
    lock(open).insert(location.clone(), Arc::clone(&sst));
    Ok(sst)
}

/// The object's metadata as the local file system gives it (its ETag made
/// the same way, from the inode, modification time and size).
fn object_meta(location: Path, metadata: &std::fs::Metadata) -> ObjectMeta {
    let modified = metadata
        .modified()
        .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
    let mtime = modified
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(metadata);
    #[cfg(not(unix))]
    let inode = 0u64;
    let size = metadata.len();
    ObjectMeta {
        location,
        last_modified: modified.into(),
        size,
        e_tag: Some(format!("\"{inode:x}-{mtime:x}-{size:x}\"")),
        version: None,
    }
}

/// The answer to a ranged read: `bytes` of the object `meta` describes.
fn range_result(bytes: Bytes, meta: ObjectMeta, range: Range<u64>) -> GetResult {
    GetResult {
        payload: GetResultPayload::Stream(futures::stream::once(async { Ok(bytes) }).boxed()),
        meta,
        range,
        attributes: object_store::Attributes::default(),
        extensions: object_store::Extensions::default(),
    }
}

/// Bytes `range` of `file` if the page cache holds them all, read without
/// blocking (`preadv2` with `RWF_NOWAIT`: the kernel answers `EAGAIN`, or
/// fewer bytes, rather than wait for the disk); `None` otherwise, to be
/// read on a blocking thread. A block read this way skips two thread
/// hand-offs (docs/store.md, "The KV interface").
#[cfg(target_os = "linux")]
fn read_cached(file: &File, range: &Range<u64>) -> Option<Bytes> {
    let len = usize::try_from(range.end - range.start).ok()?;
    let mut buf = vec![0; len];
    let mut slices = [std::io::IoSliceMut::new(&mut buf)];
    let read = rustix::io::preadv2(
        file,
        &mut slices,
        range.start,
        rustix::io::ReadWriteFlags::NOWAIT,
    )
    .ok()?;
    (read == len).then(|| Bytes::from(buf))
}

#[cfg(not(target_os = "linux"))]
fn read_cached(_file: &File, _range: &Range<u64>) -> Option<Bytes> {
    None
}

#[cfg(unix)]
fn read_at(file: &File, range: &Range<u64>) -> std::io::Result<Bytes> {
    use std::os::unix::fs::FileExt;
    let len = usize::try_from(range.end - range.start).map_err(std::io::Error::other)?;
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, range.start)?;
    Ok(Bytes::from(buf))
}

#[cfg(not(unix))]
fn read_at(file: &File, range: &Range<u64>) -> std::io::Result<Bytes> {
    use std::io::{Read, Seek, SeekFrom};
    let len = usize::try_from(range.end - range.start).map_err(std::io::Error::other)?;
    let mut buf = vec![0; len];
    let mut file = file;
    file.seek(SeekFrom::Start(range.start))?;
    file.read_exact(&mut buf)?;
    Ok(Bytes::from(buf))
}

/// Whether `options` ask only for a range of the object's bytes: no
/// conditions, no version, not just its metadata.
fn plain_range(options: &GetOptions) -> Option<GetRange> {
    let GetOptions {
        if_match,
        if_none_match,
        if_modified_since,
        if_unmodified_since,
        range,
        version,
        head,
        ..
    } = options;
    let unconditional = if_match.is_none()
        && if_none_match.is_none()
        && if_modified_since.is_none()
        && if_unmodified_since.is_none()
        && version.is_none()
        && !head;
    range.clone().filter(|_| unconditional)
}

fn is_sst(location: &Path) -> bool {
    location.extension() == Some("sst")
}

impl fmt::Display for LocalReads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (SST descriptors kept open)", self.inner)
    }
}

impl fmt::Debug for LocalReads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalReads")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl ObjectStore for LocalReads {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.forget(location);
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.forget(location);
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        match plain_range(&options) {
            Some(range) if is_sst(location) => self.read_sst(location, range).await,
            _ => self.inner.get_opts(location, options).await,
        }
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        let open = Arc::clone(&self.open);
        let locations = locations
            .map(move |location| {
                if let Ok(location) = &location {
                    lock(&open).forget(location);
                }
                location
            })
            .boxed();
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.forget(to);
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.forget(from);
        self.forget(to);
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use slatedb::object_store::ObjectStoreExt as _;

    fn stores(dir: &std::path::Path) -> (LocalReads, LocalFileSystem) {
        (
            LocalReads::new(LocalFileSystem::new_with_prefix(dir).unwrap()),
            LocalFileSystem::new_with_prefix(dir).unwrap(),
        )
    }

    /// What a get answers, comparable across stores: the bytes and range,
    /// or the error's kind.
    async fn answer(
        store: &dyn ObjectStore,
        location: &Path,
        options: GetOptions,
    ) -> Result<(Bytes, Range<u64>, u64), String> {
        match store.get_opts(location, options).await {
            Ok(got) => {
                let (range, size) = (got.range.clone(), got.meta.size);
                Ok((got.bytes().await.map_err(|e| e.to_string())?, range, size))
            }
            Err(object_store::Error::NotFound { .. }) => Err("not found".into()),
            Err(_) => Err("error".into()),
        }
    }

    #[tokio::test]
    async fn sst_reads_answer_as_the_local_file_system() {
        let tmp = testkit::tempdir("local-reads");
        let (reads, plain) = stores(tmp.path());
        let body: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let sst = Path::from("compacted/01ABC.sst");
        let other = Path::from("manifest/00001.manifest");
        reads.put(&sst, body.clone().into()).await.unwrap();
        reads.put(&other, body.clone().into()).await.unwrap();
        let missing = Path::from("compacted/missing.sst");
        let ranges = [
            GetRange::Bounded(0..4096),
            GetRange::Bounded(4096..8192),
            GetRange::Bounded(9_000..12_000),
            GetRange::Bounded(10_000..10_100),
            GetRange::Bounded(9_999..10_000),
            GetRange::Offset(5_000),
            GetRange::Suffix(100),
        ];
        for location in [&sst, &other, &missing] {
            for range in &ranges {
                // Twice: the second read finds the file open.
                for _ in 0..2 {
                    let options = || GetOptions {
                        range: Some(range.clone()),
                        ..GetOptions::default()
                    };
                    assert_eq!(
                        answer(&reads, location, options()).await,
                        answer(&plain, location, options()).await,
                        "{location} {range:?}"
                    );
                }
            }
            let whole = answer(&reads, location, GetOptions::default()).await;
            assert_eq!(whole, answer(&plain, location, GetOptions::default()).await);
        }
        let got = reads
            .get_opts(
                &sst,
                GetOptions {
                    range: Some(GetRange::Bounded(0..10)),
                    ..GetOptions::default()
                },
            )
            .await
            .unwrap();
        let meta = plain.head(&sst).await.unwrap();
        assert_eq!(got.meta, meta, "the same metadata, ETag included");
    }

    /// Bytes `range` of `location`, through `store`.
    async fn read(
        store: &dyn ObjectStore,
        location: &Path,
        range: Range<u64>,
    ) -> object_store::Result<Bytes> {
        let options = GetOptions {
            range: Some(GetRange::Bounded(range)),
            ..GetOptions::default()
        };
        store.get_opts(location, options).await?.bytes().await
    }

    #[tokio::test]
    async fn a_deleted_or_replaced_sst_is_not_read_from_its_old_descriptor() {
        let tmp = testkit::tempdir("local-reads-delete");
        let (reads, _) = stores(tmp.path());
        let sst = Path::from("wal/00000000000000000001.sst");
        reads
            .put(&sst, Bytes::from_static(b"one").into())
            .await
            .unwrap();
        assert_eq!(read(&reads, &sst, 0..3).await.unwrap(), "one");
        reads.delete(&sst).await.unwrap();
        assert!(matches!(
            read(&reads, &sst, 0..3).await,
            Err(object_store::Error::NotFound { .. })
        ));
        reads
            .put(&sst, Bytes::from_static(b"two").into())
            .await
            .unwrap();
        assert_eq!(read(&reads, &sst, 0..3).await.unwrap(), "two");
        let moved = Path::from("wal/00000000000000000002.sst");
        reads
            .put(&moved, Bytes::from_static(b"new").into())
            .await
            .unwrap();
        reads.rename(&moved, &sst).await.unwrap();
        assert_eq!(read(&reads, &sst, 0..3).await.unwrap(), "new");
    }

    #[tokio::test]
    async fn at_most_so_many_files_stay_open() {
        let tmp = testkit::tempdir("local-reads-bound");
        let (reads, _) = stores(tmp.path());
        let first = Path::from("compacted/00000.sst");
        for i in 0..OPEN_FILES + 10 {
            let sst = Path::from(format!("compacted/{i:05}.sst"));
            let byte = u8::try_from(i % 256).unwrap();
            reads
                .put(&sst, Bytes::from(vec![byte]).into())
                .await
                .unwrap();
            assert_eq!(read(&reads, &sst, 0..1).await.unwrap()[0], byte);
            // The first file, used each time, is never the one closed.
            assert_eq!(read(&reads, &first, 0..1).await.unwrap()[0], 0);
        }
        let open = reads.open.lock().unwrap();
        assert_eq!(open.files.len(), OPEN_FILES);
        assert!(open.files.contains_key(&first));
    }
}
