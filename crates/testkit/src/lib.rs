//! Test support: runs the JavaScript reference implementations that
//! datarepo's tests use as oracles (`tests/oracles/`, installed by
//! `scripts/test`).
//!
//! An oracle script reads newline-separated requests on stdin and writes
//! one response line per request on stdout.

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
};

/// The `tests/oracles` directory at the repository root.
#[must_use]
pub fn oracles_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/oracles")
}

pub use tempfile::TempDir;

/// A fresh temporary directory named after `what`, removed (with everything
/// in it) when the returned guard drops, also when a test panics.
///
/// # Panics
///
/// When the directory cannot be created.
#[must_use]
pub fn tempdir(what: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("datarepo-{what}-"))
        .tempdir()
        .expect("create a temporary directory")
}

/// Where the storage tests run, as `--store` location strings: a fresh
/// local directory (removed when the returned guard drops), and a prefix on
/// the S3-compatible server that `scripts/test` provides as
/// `DATAREPO_TEST_S3`.
///
/// # Panics
///
/// Under CI (`CI` set) without `DATAREPO_TEST_S3`: the S3 tests must not be
/// skipped there.
#[must_use]
pub fn store_locations(name: &str) -> (TempDir, Vec<String>) {
    let tmp = tempdir(name);
    let mut out = vec![tmp.path().display().to_string()];
    match std::env::var("DATAREPO_TEST_S3") {
        Ok(base) => out.push(format!("{base}/{name}-{}", std::process::id())),
        Err(_) => assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide DATAREPO_TEST_S3"
        ),
    }
    (tmp, out)
}

/// A fresh location `name` on the S3-compatible test server
/// (`DATAREPO_TEST_S3`), or `None` when there is none.
///
/// # Panics
///
/// Under CI (`CI` set) without `DATAREPO_TEST_S3`.
#[must_use]
pub fn s3_location(name: &str) -> Option<String> {
    match std::env::var("DATAREPO_TEST_S3") {
        Ok(base) => Some(format!("{base}/{name}-{}", std::process::id())),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must provide DATAREPO_TEST_S3"
            );
            None
        }
    }
}

/// Runs `node tests/oracles/<script>` with `input` on stdin and returns its
/// stdout lines.
///
/// # Panics
///
/// When the oracle packages are not installed (the message says how to
/// install them), when node cannot be started, or when the script fails.
/// These are test failures, never silent skips.
#[must_use]
pub fn run_node(script: &str, input: &str) -> Vec<String> {
    let dir = oracles_dir();
    assert!(
        dir.join("node_modules").is_dir(),
        "the npm oracle packages are not installed: run `scripts/test` \
         (or `npm ci --prefix tests/oracles`) first"
    );
    let mut child = Command::new("node")
        .arg(dir.join(script))
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node (v20 or later) must be on PATH to run the oracle tests");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("wait for node");
    writer
        .join()
        .expect("stdin writer thread")
        .expect("write oracle input");
    assert!(
        output.status.success(),
        "oracle {script} failed: {:?}",
        output.status
    );
    String::from_utf8(output.stdout)
        .expect("oracle output is UTF-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The Python interpreter of the virtual environment `scripts/test` makes
/// for the Python AT Protocol SDK (`tests/python/requirements.lock`).
///
/// # Panics
///
/// When the environment is not there (the message says how to make it):
/// a test failure, never a silent skip.
#[must_use]
pub fn python_sdk() -> PathBuf {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools/python/bin/python");
    assert!(
        python.exists(),
        "the Python AT Protocol SDK is not installed: run `scripts/test` (or \
         `python3 -m venv target/test-tools/python && target/test-tools/python/bin/pip \
         install -r tests/python/requirements.lock`) first"
    );
    python
}

/// The `tests/python` directory at the repository root.
#[must_use]
pub fn python_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/python")
}

/// A global allocator that counts allocations, for tests that pin "this
/// path allocates nothing":
///
/// ```ignore
/// #[global_allocator]
/// static GLOBAL: testkit::CountingAlloc = testkit::CountingAlloc;
/// let before = testkit::allocations();
/// // ... the code under test ...
/// assert_eq!(testkit::allocations() - before, 0);
/// ```
///
/// Counts are per thread: the test harness's own threads allocate while a
/// test runs, and must not count against the code under test.
#[derive(Debug)]
pub struct CountingAlloc;

thread_local! {
    // Const-initialised and without `Drop`, so the allocator can touch it
    // without allocating or registering a destructor.
    static ALLOCATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Allocations this thread has made through [`CountingAlloc`] so far.
#[must_use]
pub fn allocations() -> usize {
    ALLOCATIONS.with(std::cell::Cell::get)
}

// SAFETY: delegates to the system allocator; only counts calls.
#[allow(unsafe_code)]
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // `try_with`: a thread being torn down may still allocate.
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

/// Deterministic splitmix64 for generated test corpora, so a failure
/// reproduces from its seed.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (which must not be 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// An index below `len` (which must not be 0).
    pub fn index(&mut self, len: usize) -> usize {
        (self.next_u64() % len as u64) as usize
    }

    /// `len` characters drawn from `alphabet` (which must not be empty).
    pub fn string(&mut self, alphabet: &[char], len: usize) -> String {
        (0..len)
            .map(|_| alphabet[self.index(alphabet.len())])
            .collect()
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Runs this test binary's test `child` with `env` set to `dir`, lets it
/// work for `for_how_long`, kills it with SIGKILL and returns the last rev
/// it printed as `ACK <rev>` (0 if none).
///
/// `child` is the test's path as `module_path!()` gives it plus its name
/// (`concat!(module_path!(), "::crash_child")`); the binary's own name, its
/// first segment, is not part of a test's name. Panics if the binary has no
/// such test, so that a renamed child cannot turn the test into one that
/// passes without crashing anything.
pub fn run_then_kill(
    child: &str,
    env: &str,
    dir: &std::path::Path,
    for_how_long: std::time::Duration,
) -> u64 {
    use std::io::BufRead;
    let child = child
        .split_once("::")
        .map_or(child, |(_, test)| test)
        .to_owned();
    let mut process = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &child, "--nocapture", "--test-threads=1"])
        .env(env, dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = process.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut last = 0u64;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            assert!(
                line.trim() != "running 0 tests",
                "this test binary has no test named {child}"
            );
            if let Some(rev) = line
                .strip_prefix("ACK ")
                .and_then(|r| r.trim().parse().ok())
            {
                last = rev;
            }
        }
        last
    });
    std::thread::sleep(for_how_long);
    process.kill().unwrap(); // SIGKILL on Unix
    process.wait().unwrap();
    reader.join().unwrap()
}

/// A file system mounted for a test, unmounted when dropped.
#[derive(Debug)]
pub struct Mount {
    path: PathBuf,
}

impl Mount {
    /// Where it is mounted.
    #[must_use]
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn attach(args: &[&str], path: &std::path::Path) -> Option<Self> {
        std::fs::create_dir_all(path).ok()?;
        let out = Command::new("mount").args(args).arg(path).output().ok()?;
        if out.status.success() {
            Some(Self {
                path: path.to_owned(),
            })
        } else {
            eprintln!(
                "skipped: cannot mount ({}): needs root and mount permission",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            None
        }
    }

    /// A `size` (e.g. `"8m"`) tmpfs at `path`, or `None` (said on stderr)
    /// where this process may not mount.
    #[must_use]
    pub fn tmpfs(path: &std::path::Path, size: &str) -> Option<Self> {
        Self::attach(
            &["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"],
            path,
        )
    }

    /// `source` bind-mounted read-only at `path`, or `None` (said on
    /// stderr) where this process may not mount.
    #[must_use]
    pub fn read_only_bind(source: &std::path::Path, path: &std::path::Path) -> Option<Self> {
        let source = source.to_str()?;
        let bind = Self::attach(&["--bind", source], path)?;
        let remount = Command::new("mount")
            .args(["-o", "remount,ro,bind"])
            .arg(path)
            .status()
            .ok()?;
        remount.success().then_some(bind)
    }

    /// Fills the file system up with one file, `filler`.
    ///
    /// # Panics
    ///
    /// When the file cannot be created.
    pub fn fill(&self) {
        use std::io::Write as _;
        let mut f = std::fs::File::create(self.path.join("filler")).expect("create filler");
        let chunk = vec![0u8; 64 << 10];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.write_all(&[0u8; 512]);
        let _ = f.sync_all();
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}
