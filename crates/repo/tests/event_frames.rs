//! Event stream frames, byte for byte: the `#commit` and error headers as
//! AT Protocol's event-stream specification writes them (dag-cbor maps
//! `{t: "#commit", op: 1}` and `{op: -1}`), and a frame decodes back to its
//! event with the sequence number set.

use repo::{CommitEvent, Frame, RepoOp, decode_frame, error_frame, info_frame};

/// `{"t": "#commit", "op": 1}`: a map of 2; key "t" (1 byte) sorts before
/// "op" (2 bytes); "#commit" is a 7-byte text string; 1 is 0x01.
const COMMIT_HEADER: &[u8] = b"\xa2\x61t\x67#commit\x62op\x01";
/// `{"op": -1}`: -1 is major type 1 with value 0, 0x20.
const ERROR_HEADER: &[u8] = b"\xa1\x62op\x20";

fn event() -> CommitEvent {
    let cid: cid::Cid = "bafyreigo7bcxmm64phqjnri6vspcmq2vcu76wztct7hbr2reqly6d6bu7u"
        .parse()
        .unwrap();
    CommitEvent {
        seq: 0,
        rebase: false,
        too_big: false,
        repo: "did:plc:ewvi7nxzyoun6zhxrhs64oiz".into(),
        commit: cid,
        rev: "3jzfcijpj2z2a".into(),
        since: None,
        blocks: vec![1, 2, 3],
        ops: vec![RepoOp {
            action: "create".into(),
            path: "app.x.post/r1".into(),
            cid: Some(cid),
            prev: None,
        }],
        blobs: Vec::new(),
        time: "2026-11-25T00:00:00.000Z".into(),
        prev_data: None,
    }
}

#[test]
fn frames_are_byte_exact_and_decode_back() {
    let frame = CommitEvent { seq: 42, ..event() }.to_frame();
    assert!(frame.starts_with(COMMIT_HEADER));
    match decode_frame(&frame).unwrap() {
        Frame::Commit(decoded) => {
            assert_eq!(decoded.seq, 42);
            assert_eq!(*decoded, CommitEvent { seq: 42, ..event() });
        }
        other => panic!("{other:?}"),
    }
    // The body's keys are the Lexicon's, in camelCase: tooBig, not too_big.
    let body = &frame[COMMIT_HEADER.len()..];
    assert!(body.windows(7).any(|w| w == b"\x66tooBig"));
    assert!(!body.windows(7).any(|w| w == b"too_big"));

    let error = error_frame("FutureCursor", "ahead");
    assert!(error.starts_with(ERROR_HEADER));
    assert_eq!(
        decode_frame(&error).unwrap(),
        Frame::Error {
            error: "FutureCursor".into(),
            message: Some("ahead".into())
        }
    );
    let info = info_frame("OutdatedCursor", "gone");
    assert!(info.starts_with(b"\xa2\x61t\x65#info\x62op\x01"));
    assert!(
        matches!(decode_frame(&info).unwrap(), Frame::Info { name, .. } if name == "OutdatedCursor")
    );
}

#[test]
fn malformed_frames_are_errors() {
    for bytes in [&b""[..], b"\xa1\x62op\x05\xa0", b"\xff", COMMIT_HEADER] {
        assert!(decode_frame(bytes).is_err(), "{bytes:?}");
    }
}
