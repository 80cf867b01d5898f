//! `datarepo serve` killed with SIGKILL in the middle of an `uploadBlob`
//! body: no partial blob is visible under a CID (nothing directly in the
//! store's `blobs/`, only the upload's temporary object), the restarted
//! server lists no blob and takes the same upload whole, and `gc` removes
//! the dead upload's leftover.

use crate::common;

use std::{io::Write as _, net::TcpStream, path::Path, time::Duration};

use common::{datarepo, http, start_server};
use serde_json::{Value, json};

const TOKEN: &str = "killed-upload-token";
const DID: &str = "did:web:killed-upload.test";
const LEN: usize = 24 << 20;

fn body() -> Vec<u8> {
    let mut rng = testkit::Rng(0x6b11);
    (0..LEN).map(|_| rng.below(256) as u8).collect()
}

/// The names directly under `blobs/` (blobs by CID) and under
/// `blobs/tmp/` (uploads under way).
fn objects(store: &Path) -> (Vec<String>, Vec<String>) {
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    (
        names(&store.join("blobs")),
        names(&store.join("blobs").join("tmp")),
    )
}

#[test]
fn a_killed_upload_leaves_no_blob_under_a_cid() {
    let tmp = testkit::tempdir("killed-upload");
    let store = tmp.path().join("data");
    let bytes = body();
    {
        let (mut server, port) = start_server(store.to_str().unwrap(), TOKEN);
        let (status, out) = http(
            port,
            "POST",
            "/xrpc/com.atproto.repo.createRecord",
            TOKEN,
            &json!({"repo": DID, "collection": "app.test.note", "record": {"text": "hi"}})
                .to_string(),
        )
        .unwrap();
        assert_eq!(status, 200, "{out}");
        // Half the body, then the server is killed.
        let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            socket,
            "POST /xrpc/com.atproto.repo.uploadBlob?repo={DID} HTTP/1.1\r\nhost: x\r\n\
             authorization: Bearer {TOKEN}\r\ncontent-type: application/octet-stream\r\n\
             content-length: {LEN}\r\n\r\n"
        )
        .unwrap();
        socket.write_all(&bytes[..LEN / 2]).unwrap();
        // Until the server has written some of it to its temporary object.
        let mut waits = 0;
        while objects(&store).1.is_empty() {
            waits += 1;
            assert!(waits < 1_000, "the upload never reached the store in 20 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        server.0.kill().unwrap(); // SIGKILL
        server.0.wait().unwrap();
    }
    let (blobs, uploads) = objects(&store);
    assert!(
        blobs.is_empty(),
        "a blob under a CID after the kill: {blobs:?}"
    );
    assert_eq!(uploads.len(), 1, "{uploads:?}");

    {
        let (_server, port) = start_server(store.to_str().unwrap(), TOKEN);
        let (status, out) = http(
            port,
            "GET",
            &format!("/xrpc/com.atproto.sync.listBlobs?did={DID}"),
            TOKEN,
            "",
        )
        .unwrap();
        assert_eq!(status, 200, "{out}");
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap()["cids"],
            json!([])
        );
    }
    // The same bytes, whole: stored under their CID, complete.
    let file = tmp.path().join("whole.bin");
    std::fs::write(&file, &bytes).unwrap();
    let out = datarepo(
        &[
            "--store",
            store.to_str().unwrap(),
            "--repo",
            DID,
            "--json",
            "blob",
            "put",
            file.to_str().unwrap(),
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let put: Value = common::json_lines(&out).pop().unwrap();
    assert_eq!(put["blob"]["size"], LEN);
    let (blobs, _) = objects(&store);
    assert_eq!(blobs.len(), 1, "{blobs:?}");
    assert_eq!(
        std::fs::read(store.join("blobs").join(&blobs[0])).unwrap(),
        bytes
    );

    // The dead upload's object goes at the next collection (a TTL of 0:
    // no upload is under way; the temporary blob just put goes too).
    let out = datarepo(
        &[
            "--store",
            store.to_str().unwrap(),
            "--json",
            "gc",
            "--blob-temp-ttl-secs",
            "0",
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, uploads) = objects(&store);
    assert!(uploads.is_empty(), "{uploads:?}");
}
