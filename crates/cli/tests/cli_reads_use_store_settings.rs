//! Reading commands take `--store-settings` too: a settings file with a
//! mistake is an error there as it is for writing commands, and the part
//! of it a reader can use, SlateDB's local object-store cache, is used.

use crate::common;

const DID: &str = "did:web:example.com";
const POST: &str = "app.bsky.feed.post";

#[test]
fn reading_commands_check_and_use_the_settings_file() {
    let tmp = testkit::tempdir("reads-settings");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    let base = ["--store", store, "--repo", DID];
    let run = |extra: &[&str], stdin: &str| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        common::datarepo(&args, stdin)
    };
    assert!(run(&["init"], "").status.success());
    // Tiny memtables: the record reaches an SST, which a reader's cache
    // holds (a short-lived writer's close leaves small writes in the WAL).
    let tiny = tmp.path().join("tiny.toml");
    std::fs::write(&tiny, "l0_sst_size_bytes = 64\n").unwrap();
    let put = run(
        &[
            "--store-settings",
            tiny.to_str().unwrap(),
            "put",
            POST,
            "one",
        ],
        r#"{"text": "hello"}"#,
    );
    assert!(put.status.success(), "{put:?}");

    // A file that does not parse, and one that does not exist: errors that
    // name the file, and nothing is listed.
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "flush_interval = \n").unwrap();
    let missing = tmp.path().join("missing.toml");
    for file in [&bad, &missing] {
        let file = file.to_str().unwrap();
        let out = run(&["--store-settings", file, "ls", POST], "");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("settings file") && stderr.contains(file),
            "{stderr}"
        );
    }

    // A cache folder in the file: the reader fills it as it reads.
    let cache = tmp.path().join("cache");
    let good = tmp.path().join("good.toml");
    std::fs::write(
        &good,
        format!(
            "[object_store_cache_options]\nroot_folder = {:?}\n",
            cache.to_str().unwrap()
        ),
    )
    .unwrap();
    let out = run(
        &[
            "--store-settings",
            good.to_str().unwrap(),
            "get",
            POST,
            "one",
        ],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hello"),
        "{out:?}"
    );
    let cached = walk(&cache);
    assert!(!cached.is_empty(), "the reader cached nothing in {cache:?}");
}

/// Every file under `dir` (none if it does not exist).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
