//! What one commit signature costs: `SigningKey::sign` (SHA-256, RFC 6979,
//! low-S) and `PublicKey::verify` of a commit-sized message, per curve.
//!
//!   cargo run --release -p datarepo-bench --bin sign-cost

#![allow(clippy::disallowed_methods, clippy::unwrap_used)] // a benchmark measures wall time

use std::time::Instant;

fn main() {
    for curve in [repo::Curve::K256, repo::Curve::P256] {
        let key = repo::SigningKey::from_scalar_bytes(curve, &[0x2a; 32]).unwrap();
        let msg = vec![7u8; 120];
        let n = 20000;
        let start = Instant::now();
        let mut acc = 0u8;
        for i in 0..n {
            let mut m = msg.clone();
            m[0] = i as u8;
            acc ^= key.sign(&m)[0];
        }
        let sign = start.elapsed().as_secs_f64() / n as f64 * 1e6;
        let sig = key.sign(&msg);
        let start = Instant::now();
        for _ in 0..n / 4 {
            key.public_key().verify(&msg, &sig).unwrap();
        }
        let verify = start.elapsed().as_secs_f64() / (n / 4) as f64 * 1e6;
        println!("{curve}: sign {sign:.1} µs, verify {verify:.1} µs ({acc})");
    }
}
