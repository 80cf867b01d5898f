//! Accounts and sessions for the tests: a clock they move by hand,
//! randomness that never repeats, and calls with a bearer token.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use serde_json::Value;
use server::{AccountPolicy, Sessions};

use super::TestServer;

/// The server's DID in the tests' tokens.
pub const SERVER_DID: &str = "did:web:server.example";

/// Sessions signed with a fixed secret, read from `now` (seconds), with
/// access tokens living `access_ttl` seconds, under `policy`.
pub fn sessions(now: &Arc<AtomicU64>, access_ttl: u64, policy: AccountPolicy) -> Sessions {
    let now = Arc::clone(now);
    let counter = Arc::new(AtomicU64::new(1));
    Sessions {
        tokens: accounts::tokens::Tokens::new(&[7; 32], SERVER_DID)
            .with_access_ttl(std::time::Duration::from_secs(access_ttl)),
        clock: Arc::new(move || now.load(Ordering::Relaxed)),
        random: Arc::new(move |bytes: &mut [u8; 32]| {
            // Distinct bytes in every position a caller may take.
            let n = counter.fetch_add(1, Ordering::Relaxed);
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = (n.wrapping_mul(31).wrapping_add(i as u64 * 7)) as u8 ^ (n >> 8) as u8;
            }
            bytes[..8].copy_from_slice(&n.to_be_bytes());
            bytes[16..24].copy_from_slice(&n.to_le_bytes());
        }),
        policy,
    }
}

/// A clock at a fixed start, moved by the test.
pub fn clock() -> Arc<AtomicU64> {
    Arc::new(AtomicU64::new(1_790_000_000))
}

/// Calls `method` (POST with `body`, else GET) with `bearer`: the status
/// and the JSON answer (`null` when there is none).
pub async fn call(
    s: &TestServer,
    method: &str,
    bearer: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let url = format!("{}/xrpc/{method}", s.url);
    let mut req = match &body {
        Some(b) => s.client.post(url).json(b),
        None => s.client.get(url),
    };
    if let Some(t) = bearer {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}
