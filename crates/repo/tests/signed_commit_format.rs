//! The signed commit's bytes, pinned (`docs/repo.md`, "Signed commits").
//!
//! The expected values were made by AT Protocol's reference code, not by
//! datarepo: `@ipld/dag-cbor` encoded the commit and `@atproto/crypto`
//! (`P256Keypair` / `Secp256k1Keypair.import` of 32 bytes of 0x11) signed
//! it. `signatures_vs_atproto_crypto` checks the same agreement live.

use repo::{CommitData, Curve, PublicKey, SIGNED_COMMIT_VERSION, SigningKey};

const UNSIGNED: &str = "a5637265766d336a7a6663696a706a327a32616464617461d82a58250001711220cef8457633dc79e096c51eac9e264355153feb66629fce18ea2482f1e1f834fd6470726576f6647265706f78206469643a706c633a65777669376e787a796f756e367a687872687336346f697a6776657273696f6e01";

struct Golden {
    curve: Curve,
    did: &'static str,
    sig: &'static str,
    cid: &'static str,
}

const GOLDEN: [Golden; 2] = [
    Golden {
        curve: Curve::P256,
        did: "did:key:zDnaeQa8zprPhHA7Yuxcgc2Uh6XNQgaKjmFZE4EaA9fk5svmJ",
        sig: "4fbf612d349fe767ba62d7db7d3436a9de8310534d722a9d8cba58cf8f3547c87e0ba578d4d1b397f7baacdf9b2168ea94d78c989c6ff32d43a1f58ec06d6b6d",
        cid: "bafyreic3jv4uems3vjm6indicjpf3id6bgwkaggf3wo7jmn6tw3iqymefe",
    },
    Golden {
        curve: Curve::K256,
        did: "did:key:zQ3shjyJXUaRJC2GC43mX8aPrUhoTdoiongXhZjsdTzPKYZUM",
        sig: "2b992a1fd9a307312f35795fee978a35ef3020f8276f5dd4aa0dd1b1900b6fa86176a6c8459f5007bb631322294fcd442910f441356879bb9d119cb2349e6a86",
        cid: "bafyreie36j43qnrdhrn42ljnlqlx5dzhmyof6rdosraq5mq4mpxw563gsa",
    },
];

fn commit() -> CommitData {
    CommitData::new(
        "did:plc:ewvi7nxzyoun6zhxrhs64oiz".into(),
        "3jzfcijpj2z2a".parse().unwrap(),
        "bafyreigo7bcxmm64phqjnri6vspcmq2vcu76wztct7hbr2reqly6d6bu7u"
            .parse()
            .unwrap(),
        None,
    )
}

/// The signed commit: the unsigned map with `sig` added (a map of 6
/// entries, `sig` sorting second by dag-cbor's length-first key order).
fn signed_bytes(sig: &str) -> Vec<u8> {
    let unsigned = hex::decode(UNSIGNED).unwrap();
    let mut out = vec![0xa6];
    // "rev" and its 13-character value come first.
    out.extend_from_slice(&unsigned[1..19]);
    out.extend_from_slice(b"\x63sig\x58\x40");
    out.extend_from_slice(&hex::decode(sig).unwrap());
    out.extend_from_slice(&unsigned[19..]);
    out
}

#[test]
fn signed_commits_are_byte_exact() {
    for golden in GOLDEN {
        let key = SigningKey::from_scalar_bytes(golden.curve, &[0x11; 32]).unwrap();
        assert_eq!(key.public_key().did_key(), golden.did);
        let signed = commit().signed(&key);
        assert_eq!(signed.version, Some(SIGNED_COMMIT_VERSION));
        assert_eq!(hex::encode(signed.unsigned_bytes()), UNSIGNED);
        assert_eq!(hex::encode(signed.sig.as_ref().unwrap()), golden.sig);
        let block = signed.encode();
        assert_eq!(block.bytes()[..], signed_bytes(golden.sig)[..]);
        assert_eq!(block.cid().to_string(), golden.cid);
        // And back: the block decodes to the commit, which verifies.
        let back = CommitData::decode(block.cid(), block.bytes()).unwrap();
        assert_eq!(back, signed);
        let public: PublicKey = golden.did.parse().unwrap();
        assert_eq!(back.verify(&[public]), Ok(&public));
    }
}

#[test]
fn unsigned_commits_keep_their_four_fields() {
    let block = commit().encode();
    // {data, prev, repo, rev}: the unsigned bytes without `version`.
    let unsigned = hex::decode(UNSIGNED).unwrap();
    let without_version = [&[0xa4][..], &unsigned[1..unsigned.len() - 9]].concat();
    assert_eq!(block.bytes()[..], without_version[..]);
    let back = CommitData::decode(block.cid(), block.bytes()).unwrap();
    assert!(!back.is_signed());
    assert_eq!(back.verify(&[]), Err(repo::SignatureError::Unsigned));
}

#[test]
fn half_signed_and_unknown_versions_are_malformed() {
    let key = SigningKey::from_scalar_bytes(Curve::P256, &[0x11; 32]).unwrap();
    let signed = commit().signed(&key);
    let cases = [
        CommitData {
            sig: None,
            ..signed.clone()
        },
        CommitData {
            version: None,
            ..signed.clone()
        },
        CommitData {
            version: Some(2),
            ..signed.clone()
        },
    ];
    for case in cases {
        let block = case.encode();
        assert!(
            CommitData::decode(block.cid(), block.bytes()).is_err(),
            "{case:?}"
        );
    }
}
