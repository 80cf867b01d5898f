//! Backups with blobs: `export --history --blobs DIR` (and an increment
//! `--since REV` into the same directory) copies the files records refer
//! to; `import FILE --blobs DIR` restores them, each checked against its
//! CID. Without the directory the records come in and the blobs are named
//! as missing (by `import` and by `check`) until the file is imported
//! again with it. Damaged bytes are refused on import and reported by
//! `check`.

use crate::common;

use std::path::Path;

use common::{datarepo, json_lines};
use serde_json::{Value, json};

const DID: &str = "did:web:backups-with-blobs.test";

fn run(store: &Path, args: &[&str]) -> (bool, Value, String) {
    let mut all = vec!["--store", store.to_str().unwrap(), "--repo", DID, "--json"];
    all.extend_from_slice(args);
    let out = datarepo(&all, "");
    let value = json_lines(&out).pop().unwrap_or(Value::Null);
    (
        out.status.success(),
        value,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(store: &Path, args: &[&str]) -> Value {
    let (success, value, stderr) = run(store, args);
    assert!(success, "{args:?}: {stderr}");
    value
}

fn put_post(store: &Path, rkey: &str, blob: &Value) {
    let post = json!({"text": "a picture", "createdAt": "2026-11-27T00:00:00Z",
        "embed": {"$type": "app.bsky.embed.images", "images": [{"alt": "", "image": blob}]}});
    let mut args = vec!["--store", store.to_str().unwrap(), "--repo", DID];
    args.extend(["put", "app.bsky.feed.post", rkey]);
    let out = datarepo(&args, &post.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A file of `len` bytes whose content depends on `seed`, put as a blob:
/// the file's bytes and the blob JSON.
fn blob(store: &Path, dir: &Path, seed: u8, len: usize) -> (Vec<u8>, Value) {
    let path = dir.join(format!("file-{seed}.bin"));
    let bytes: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    std::fs::write(&path, &bytes).unwrap();
    let put = ok(store, &["blob", "put", path.to_str().unwrap()]);
    (bytes, put["blob"].clone())
}

fn cid_of(blob: &Value) -> String {
    blob["ref"]["$link"].as_str().unwrap().to_owned()
}

#[test]
fn backups_carry_blobs_and_restores_check_them() {
    let tmp = testkit::tempdir("backup-blobs");
    let dir = tmp.path();
    let source = dir.join("source");
    let blobs_dir = dir.join("backup-blobs");
    ok(&source, &["init"]);
    let (first_bytes, first) = blob(&source, dir, 1, 300_000);
    put_post(&source, "3kaaaaaaaaa22", &first);
    let full = dir.join("full.car");
    let exported = ok(
        &source,
        &[
            "export",
            full.to_str().unwrap(),
            "--history",
            "--blobs",
            blobs_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(exported["blobs"]["copied"], 1, "{exported}");
    assert_eq!(exported["blobs"]["bytes"], first_bytes.len());
    // The directory holds the file's bytes under the blob's CID.
    assert_eq!(
        std::fs::read(blobs_dir.join(cid_of(&first))).unwrap(),
        first_bytes
    );

    // An increment into the same directory copies only the new blob.
    let (second_bytes, second) = blob(&source, dir, 2, 5_000);
    put_post(&source, "3kaaaaaaaab22", &second);
    let increment = dir.join("increment.car");
    let rev = exported["rev"].as_str().unwrap();
    let exported = ok(
        &source,
        &[
            "export",
            increment.to_str().unwrap(),
            "--since",
            rev,
            "--blobs",
            blobs_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(exported["blobs"]["copied"], 1, "{exported}");
    assert_eq!(exported["blobs"]["present"], 1, "{exported}");

    // `--blobs` alone, as AT Protocol users write it: FILE.blobs beside
    // the file, on export and on import.
    let alone = dir.join("alone.car");
    let exported = ok(
        &source,
        &["export", alone.to_str().unwrap(), "--history", "--blobs"],
    );
    assert_eq!(exported["blobs"]["copied"], 2, "{exported}");
    assert_eq!(
        std::fs::read(dir.join("alone.car.blobs").join(cid_of(&first))).unwrap(),
        first_bytes
    );
    let imported = ok(
        &dir.join("restored-alone"),
        &["import", alone.to_str().unwrap(), "--blobs"],
    );
    assert_eq!(imported["blobs"]["copied"], 2, "{imported}");
    assert_eq!(imported["blobsMissing"], json!([]), "{imported}");

    // Restored without the directory: the records come in, the blob is
    // named as missing, and check says so.
    let restored = dir.join("restored");
    let imported = ok(&restored, &["import", full.to_str().unwrap()]);
    assert_eq!(
        imported["blobsMissing"],
        json!([cid_of(&first)]),
        "{imported}"
    );
    let (intact, report, _) = run(&restored, &["check"]);
    assert!(!intact, "{report}");
    let problems = report["repos"][0]["problems"].to_string();
    assert!(problems.contains(&cid_of(&first)), "{problems}");
    let (found, _, _) = run(&restored, &["blob", "get", &cid_of(&first)]);
    assert!(!found);

    // Imported again with the directory, then the increment: every blob
    // is there, checked, and reads back as it was.
    let imported = ok(
        &restored,
        &[
            "import",
            full.to_str().unwrap(),
            "--blobs",
            blobs_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(imported["blobs"]["copied"], 1, "{imported}");
    assert_eq!(imported["blobsMissing"], json!([]));
    let imported = ok(
        &restored,
        &[
            "import",
            increment.to_str().unwrap(),
            "--blobs",
            blobs_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(imported["blobsMissing"], json!([]), "{imported}");
    let report = ok(&restored, &["check"]);
    assert_eq!(report["repos"][0]["blobs"], 2, "{report}");
    assert_eq!(report["intact"], true, "{report}");
    for (blob, bytes) in [(&first, &first_bytes), (&second, &second_bytes)] {
        let back = dir.join("back.bin");
        ok(
            &restored,
            &["blob", "get", &cid_of(blob), "-o", back.to_str().unwrap()],
        );
        assert_eq!(&std::fs::read(&back).unwrap(), bytes);
    }
    let listed = ok(&restored, &["blob", "ls"]);
    let states: Vec<&Value> = listed["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["state"])
        .collect();
    assert_eq!(states, [&json!("referenced"); 2], "{listed}");

    // Damaged bytes in the store: check names the blob.
    let stored = restored.join("blobs").join(cid_of(&second));
    let mut damaged = second_bytes.clone();
    damaged[0] ^= 1;
    std::fs::write(&stored, &damaged).unwrap();
    let (intact, report, _) = run(&restored, &["check"]);
    assert!(!intact, "{report}");
    let problems = report["repos"][0]["problems"].to_string();
    assert!(
        problems.contains(&cid_of(&second)) && problems.contains("damaged"),
        "{problems}"
    );

    // Damaged bytes in the backup directory: the import is refused and
    // nothing of the repository is written.
    std::fs::write(blobs_dir.join(cid_of(&first)), &damaged).unwrap();
    let elsewhere = dir.join("elsewhere");
    let (imported, _, stderr) = run(
        &elsewhere,
        &[
            "import",
            full.to_str().unwrap(),
            "--blobs",
            blobs_dir.to_str().unwrap(),
        ],
    );
    assert!(!imported);
    assert!(
        stderr.contains(&cid_of(&first)) && stderr.contains("nothing was imported"),
        "{stderr}"
    );
    let (listed, repos, _) = run(&elsewhere, &["repo", "list"]);
    assert!(
        !listed || repos.to_string().matches(DID).count() == 0,
        "{repos}"
    );
}
