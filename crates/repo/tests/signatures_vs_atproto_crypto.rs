//! Commit signatures cross-checked with AT Protocol's own implementation,
//! `@atproto/crypto` (tests/oracles/atproto-crypto.mjs), for both curves:
//! it verifies datarepo's signatures and did:keys, datarepo verifies its
//! signatures, both sign alike (RFC 6979 makes signatures deterministic),
//! and both reject high-S, tampered and wrong-key signatures.

use repo::{CommitData, Curve, PublicKey, SignatureError, SigningKey};
use serde_json::{Value, json};

fn oracle(requests: &[Value]) -> Vec<Value> {
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    testkit::run_node("atproto-crypto.mjs", &input)
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn scalar(seed: u8) -> [u8; 32] {
    let mut bytes = [seed; 32];
    bytes[0] = 0x3c; // below both curve orders
    bytes
}

fn messages() -> Vec<Vec<u8>> {
    let data = pail::Shard::empty(repo::default_shard_config()).cid();
    let commit = CommitData::new(
        "did:plc:ewvi7nxzyoun6zhxrhs64oiz".into(),
        "3jzfcijpj2z2a".parse().unwrap(),
        data,
        None,
    );
    let mut signed = commit.clone();
    signed.version = Some(repo::SIGNED_COMMIT_VERSION);
    vec![
        Vec::new(),
        b"hello".to_vec(),
        vec![0xff; 1000],
        signed.unsigned_bytes(),
    ]
}

fn cases() -> Vec<(Curve, SigningKey)> {
    let mut out = Vec::new();
    for curve in [Curve::P256, Curve::K256] {
        for seed in [1u8, 2, 0x7f, 0xee] {
            out.push((
                curve,
                SigningKey::from_scalar_bytes(curve, &scalar(seed)).unwrap(),
            ));
        }
    }
    out
}

#[test]
fn the_reference_signs_as_datarepo_does_and_each_verifies_the_other() {
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    let keys = cases();
    for (i, (curve, key)) in keys.iter().enumerate() {
        let seed = [1u8, 2, 0x7f, 0xee][i % 4];
        for message in messages() {
            requests.push(json!({
                "op": "sign", "curve": curve.name(),
                "privateKey": hex::encode(scalar(seed)), "data": hex::encode(&message),
            }));
            requests.push(json!({
                "op": "verify", "did": key.public_key().did_key(),
                "data": hex::encode(&message), "sig": hex::encode(key.sign(&message)),
            }));
            expected.push((key, message));
        }
    }
    let answers = oracle(&requests);
    assert_eq!(answers.len(), requests.len());
    for (pair, (key, message)) in answers.chunks(2).zip(&expected) {
        let (signed, verified) = (&pair[0], &pair[1]);
        // The reference's did:key for the same private key is ours.
        assert_eq!(signed["did"], key.public_key().did_key(), "{signed}");
        // The reference's signature verifies here, and is byte for byte
        // ours: both follow RFC 6979 and normalize to low S.
        let theirs = hex::decode(signed["sig"].as_str().unwrap()).unwrap();
        assert_eq!(key.public_key().verify(message, &theirs), Ok(()));
        assert_eq!(theirs, key.sign(message));
        // Ours verifies there.
        assert_eq!(verified["valid"], true, "{verified}");
    }
}

#[test]
fn both_reject_high_s_tampered_and_wrong_key_signatures() {
    let keys = cases();
    let message = b"the unsigned commit".to_vec();
    let mut flips = Vec::new();
    for (curve, key) in &keys {
        flips.push(
            json!({"op": "highS", "curve": curve.name(), "sig": hex::encode(key.sign(&message))}),
        );
    }
    let high: Vec<Vec<u8>> = oracle(&flips)
        .iter()
        .map(|a| hex::decode(a["sig"].as_str().unwrap()).unwrap())
        .collect();
    let mut requests = Vec::new();
    let mut ours = Vec::new();
    for (i, (_, key)) in keys.iter().enumerate() {
        let public = key.public_key();
        let sig = key.sign(&message);
        let other = keys[(i + 1) % keys.len()].1.public_key();
        let mut tampered = message.clone();
        tampered[3] ^= 1;
        let cases: [(&PublicKey, &[u8], &[u8], SignatureError); 3] = [
            (public, &message, &high[i], SignatureError::HighS),
            (public, &tampered, &sig, SignatureError::Mismatch),
            (other, &message, &sig, SignatureError::Mismatch),
        ];
        for (k, m, s, error) in cases {
            requests.push(json!({"op": "verify", "did": k.did_key(), "data": hex::encode(m), "sig": hex::encode(s)}));
            ours.push((k.verify(m, s), error));
        }
    }
    for (answer, (ours, error)) in oracle(&requests).iter().zip(ours) {
        assert_eq!(answer["valid"], false, "the reference accepted: {answer}");
        assert_eq!(ours, Err(error));
    }
}
