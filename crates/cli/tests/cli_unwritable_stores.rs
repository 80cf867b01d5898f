//! On a store that cannot be written (a read-only mount, a full disk) the
//! reading commands work and write nothing, and the writing ones, `serve`
//! included, fail at once with an error that names the cause: none hangs.
//! Needs root to mount; skipped with a message elsewhere.

use crate::common;

use std::{collections::BTreeMap, path::Path, time::Duration};

use testkit::Mount;

const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

/// Every file under `dir` with its size and contents' length.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

/// Runs `datarepo` on `store`, killed after 60 s (a hang fails the test).
fn run(store: &Path, args: &[&str]) -> std::process::Output {
    let mut full = vec!["--store", store.to_str().unwrap(), "--repo", DID];
    full.extend_from_slice(args);
    let out = std::process::Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_datarepo"))
        .args(&full)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "datarepo {args:?} hung");
    out
}

fn seed(store: &Path) {
    assert!(run(store, &["init"]).status.success());
    for rkey in ["a", "b", "c"] {
        let out = common::datarepo(
            &[
                "--store",
                store.to_str().unwrap(),
                "--repo",
                DID,
                "put",
                POST,
                rkey,
            ],
            &format!(r#"{{"text": "{rkey}"}}"#),
        );
        assert!(out.status.success(), "{out:?}");
    }
}

fn reading_commands_work_and_write_nothing(store: &Path, files_of: &Path) {
    let before = files(files_of);
    for args in [
        &["stats"][..],
        &["get", POST, "b"],
        &["ls", POST],
        &["log"],
        &["check"],
        &["collection", "list"],
    ] {
        let out = run(store, args);
        assert!(out.status.success(), "datarepo {args:?}: {out:?}");
    }
    let ls = run(store, &["ls", POST, "--json"]);
    let page: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    assert_eq!(page["records"].as_array().unwrap().len(), 3);
    assert_eq!(
        files(files_of),
        before,
        "a reading command changed the store's files"
    );
}

fn writing_commands_fail_fast(store: &Path, cause: &str) {
    let put = run(store, &["put", POST, "d"]);
    assert!(!put.status.success());
    let stderr = String::from_utf8_lossy(&put.stderr);
    assert!(stderr.contains(cause), "{stderr}");

    let port = common::free_port();
    let serve = std::process::Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_datarepo"))
        .args(["--store", store.to_str().unwrap(), "serve", "--addr"])
        .arg(format!("127.0.0.1:{port}"))
        .env("DATAREPO_TOKEN", "t")
        .output()
        .unwrap();
    assert_ne!(serve.status.code(), Some(124), "serve hung");
    assert!(!serve.status.success());
    let stderr = String::from_utf8_lossy(&serve.stderr);
    assert!(stderr.contains(cause), "{stderr}");
}

#[test]
fn a_read_only_mount() {
    let tmp = testkit::tempdir("unwritable-ro");
    let source = tmp.path().join("source");
    std::fs::create_dir_all(&source).unwrap();
    seed(&source.join("data"));
    let Some(ro) = Mount::read_only_bind(&source, &tmp.path().join("ro")) else {
        return;
    };
    let store = ro.path().join("data");
    reading_commands_work_and_write_nothing(&store, &source);
    writing_commands_fail_fast(&store, "Read-only file system");
}

#[test]
fn a_full_disk() {
    let tmp = testkit::tempdir("unwritable-full");
    let Some(disk) = Mount::tmpfs(&tmp.path().join("disk"), "16m") else {
        return;
    };
    let store = disk.path().join("data");
    seed(&store);
    disk.fill();
    std::thread::sleep(Duration::from_millis(50));
    reading_commands_work_and_write_nothing(&store, &store);
    writing_commands_fail_fast(&store, "No space left on device");
}

/// A disk that fills up under a running server: the next write is answered
/// within seconds (not the 30 s request timeout) with the cause named, the
/// log says it at error level, and writes succeed again once space is back.
#[test]
fn a_disk_that_fills_while_serving() {
    let tmp = testkit::tempdir("unwritable-filling");
    let Some(disk) = Mount::tmpfs(&tmp.path().join("disk"), "16m") else {
        return;
    };
    let store = disk.path().join("data");
    let port = common::free_port();
    let mut server = common::ServerProcess(
        common::serve(store.to_str().unwrap(), port, "t")
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    assert!(common::wait_until_up(port));
    let create = |text: &str| {
        let started = tokio::time::Instant::now();
        let body = format!(
            r#"{{"repo": "{DID}", "collection": "{POST}", "record": {{"text": "{text}"}}}}"#
        );
        let answer = common::http(
            port,
            "POST",
            "/xrpc/com.atproto.repo.createRecord",
            "t",
            &body,
        )
        .expect("an answer");
        (answer, started.elapsed())
    };
    assert_eq!(create("before").0.0, 200);

    disk.fill();
    let ((status, body), took) = create("full");
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("No space left on device"), "{body}");
    assert!(took < Duration::from_secs(10), "answered after {took:?}");

    std::fs::remove_file(disk.path().join("filler")).unwrap();
    let mut recovered = false;
    for _ in 0..20 {
        if create("after").0.0 == 200 {
            recovered = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(recovered, "writes did not succeed once space was back");

    assert!(server.terminate());
    let mut log = String::new();
    std::io::Read::read_to_string(server.0.stderr.as_mut().unwrap(), &mut log).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains("ERROR") && l.contains("No space left on device")),
        "{log}"
    );
}
