//! Any bytes through the signature decoders and verifiers: a CAR file to
//! `verify_car` and `verify_record`, a `did:key` to `PublicKey::from_did_key`
//! (an accepted one prints back to its input), a PEM text to
//! `SigningKey::from_pkcs8_pem`, a commit block to `CommitData::decode` and a
//! signature to `PublicKey::verify`: errors, never panics; nothing verifies
//! against the fixed key unless that key signed it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use repo::{CommitData, Curve, PublicKey, SigningKey, VerifyOptions};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let key = *SigningKey::from_scalar_bytes(Curve::K256, &[7; 32])
        .unwrap()
        .public_key();
    match mode % 5 {
        0 => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            rt.block_on(async {
                let options = VerifyOptions {
                    keys: vec![key],
                    incremental: mode & 0x80 != 0,
                    unsigned_ok: mode & 0x40 != 0,
                };
                let _ = repo::verify_car(rest, &options).await;
                let _ = repo::verify_record(rest, "did:web:a", "app.x.post", "r", &[key]).await;
            });
        }
        1 => {
            if let Ok(text) = std::str::from_utf8(rest)
                && let Ok(parsed) = PublicKey::from_did_key(text)
            {
                assert_eq!(parsed.did_key(), text);
            }
        }
        2 => {
            if let Ok(text) = std::str::from_utf8(rest) {
                let _ = SigningKey::from_pkcs8_pem(text);
            }
        }
        3 => {
            let cid = pail::Cid::default();
            if let Ok(commit) = CommitData::decode(cid, rest) {
                assert_eq!(commit.encode().bytes()[..], *rest);
                let _ = commit.verify(&[key]);
            }
        }
        _ => {
            let (sig, message) = rest.split_at(rest.len().min(64));
            for curve_key in [
                key,
                *SigningKey::from_scalar_bytes(Curve::P256, &[7; 32])
                    .unwrap()
                    .public_key(),
            ] {
                let _ = curve_key.verify(message, sig);
            }
        }
    }
});
