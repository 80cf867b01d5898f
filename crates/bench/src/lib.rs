//! Shared pieces of the comparison benchmarks.

use cid::Cid;
use multihash_codetable::{Code, MultihashDigest};

/// Deterministic splitmix64, the same generator the tests use.
pub use testkit::Rng;

/// `n` distinct random keys of 20–40 characters from `[a-z0-9]`.
#[must_use]
pub fn random_keys(n: usize, seed: u64) -> Vec<String> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = Rng(seed);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = 20 + (rng.next_u64() % 21) as usize;
        let key: String = (0..len)
            .map(|_| char::from(ALPHABET[(rng.next_u64() % ALPHABET.len() as u64) as usize]))
            .collect();
        if seen.insert(key.clone()) {
            out.push(key);
        }
    }
    out
}

/// A raw-codec CID value for item `i`.
#[must_use]
pub fn raw_value(i: u64) -> Cid {
    Cid::new_v1(0x55, Code::Sha2_256.digest(&i.to_be_bytes()))
}

/// The value of command-line option `name` (`--name VALUE`), or `default`.
#[must_use]
pub fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A field of `/proc/self/status` in MiB (Linux; NaN elsewhere).
fn status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Peak resident memory since the last [`reset_peak`], in MiB.
#[must_use]
pub fn peak_mib() -> f64 {
    status_mib("VmHWM:")
}

/// Resident memory now, in MiB.
#[must_use]
pub fn current_mib() -> f64 {
    status_mib("VmRSS:")
}

/// Resets the peak to the current resident size.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The `datarepo` binary the process benchmarks run: `DATAREPO_BIN`, else
/// the workspace's release build (`cargo build --release --bin datarepo`).
#[must_use]
pub fn datarepo_bin() -> std::path::PathBuf {
    std::env::var_os("DATAREPO_BIN").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/datarepo"),
        std::path::PathBuf::from,
    )
}
