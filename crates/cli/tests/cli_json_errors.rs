//! With `--json`, a failing command prints its error as one JSON object on
//! stderr (`{"error": …}`) and nothing on stdout; without, `datarepo: …`.

use crate::common;

use common::datarepo;

#[test]
fn errors_are_json_on_stderr_with_json() {
    let tmp = testkit::tempdir("cli-json-errors");
    let store = tmp.path().join("absent");
    let store = store.to_str().unwrap();
    for args in [
        &[
            "--store",
            store,
            "--repo",
            "did:web:x.example",
            "get",
            "a.b.c",
            "k",
        ][..],
        &["pail", "ls", "--path", "/nonexistent/tree.car"],
        &["--store", "gs://bucket", "gc"],
    ] {
        let plain = datarepo(args, "");
        assert_eq!(plain.status.code(), Some(1), "{args:?}: {plain:?}");
        assert!(
            String::from_utf8_lossy(&plain.stderr).starts_with("datarepo: "),
            "{args:?}: {plain:?}"
        );
        let mut with_json = args.to_vec();
        with_json.push("--json");
        let out = datarepo(&with_json, "");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
        let e: serde_json::Value = serde_json::from_slice(&out.stderr)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {out:?}"));
        assert!(e["error"].is_string(), "{e}");
    }
}
