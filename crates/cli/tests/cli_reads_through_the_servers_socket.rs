//! Beside a `datarepo serve` writing a local store, reading commands read
//! through the server (its socket, `datarepo.sock` in the store's
//! directory) instead of opening the database, and print exactly what they
//! print with `--direct-reads` and after the server has stopped.

use crate::common;

use std::process::Output;

const TOKEN: &str = "socket-token";
const DID: &str = "did:web:socket.example";
const POST: &str = "app.bsky.feed.post";
const THROUGH: &str = "reading through the store's writer";

fn run(store: &str, args: &[&str], extra: &[&str]) -> Output {
    let mut all = vec!["--store", store, "--repo", DID];
    all.extend_from_slice(extra);
    all.extend_from_slice(args);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_datarepo"));
    cmd.args(&all).env("RUST_LOG", "store=debug");
    let out = common::datarepo_with(&mut cmd, "");
    assert!(out.status.success(), "{args:?} {extra:?}: {out:?}");
    out
}

fn read_through(out: &Output) -> bool {
    String::from_utf8_lossy(&out.stderr).contains(THROUGH)
}

#[test]
fn reading_commands_beside_a_server_read_through_it_and_print_the_same() {
    let tmp = testkit::tempdir("reads-socket");
    let store = tmp.path().join("data");
    let store = store.to_str().unwrap();
    run(store, &["init"], &[]);
    run(
        store,
        &["index", "add", POST, "lang", "--kind", "keyword"],
        &[],
    );
    let (mut server, port) = common::start_server(store, TOKEN);
    let mut rkeys = Vec::new();
    for n in 0..30 {
        let lang = ["en", "fr", "ja"][n % 3];
        let body = serde_json::json!({
            "repo": DID, "collection": POST,
            "record": {"text": format!("post {n}"), "lang": lang, "createdAt": "2024-05-01T00:00:00Z"},
        });
        rkeys.push(common::create_record(port, TOKEN, &body));
    }
    let car_through = tmp.path().join("through.car");
    let car_direct = tmp.path().join("direct.car");
    let commands: Vec<Vec<&str>> = vec![
        vec!["get", POST, &rkeys[7]],
        vec!["ls", POST],
        vec!["--json", "ls", POST, "--limit", "10"],
        vec!["query", POST, "--where", "lang = \"fr\"", "--count"],
        vec![
            "--json",
            "query",
            POST,
            "--where",
            "lang in [\"en\", \"ja\"]",
        ],
        vec!["query", POST, "--top", "lang"],
        vec!["log", "--limit", "5"],
        vec!["stats"],
        vec!["check"],
    ];

    let mut through = Vec::new();
    for args in &commands {
        let out = run(store, args, &[]);
        assert!(
            read_through(&out),
            "{args:?} did not read through the server: {out:?}"
        );
        let direct = run(store, args, &["--direct-reads"]);
        assert!(!read_through(&direct), "{args:?}: {direct:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&direct.stdout),
            "{args:?}: through the server, then with --direct-reads"
        );
        through.push(out.stdout);
    }
    let export = run(store, &["export", car_through.to_str().unwrap()], &[]);
    assert!(read_through(&export), "{export:?}");
    run(
        store,
        &["export", car_direct.to_str().unwrap()],
        &["--direct-reads"],
    );
    let car = std::fs::read(&car_through).unwrap();
    assert!(car.len() > 1_000, "{} bytes", car.len());
    assert_eq!(car, std::fs::read(&car_direct).unwrap());
    // A record the server has just acknowledged is read at once.
    let (status, reply) = common::http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.putRecord",
        TOKEN,
        &serde_json::json!({"repo": DID, "collection": POST, "rkey": "latest", "record": {"text": "now"}})
            .to_string(),
    )
    .unwrap();
    assert_eq!(status, 200, "{reply}");
    let latest = run(store, &["get", POST, "latest"], &[]);
    assert!(
        String::from_utf8_lossy(&latest.stdout).contains("now"),
        "{latest:?}"
    );
    let (status, reply) = common::http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.deleteRecord",
        TOKEN,
        &serde_json::json!({"repo": DID, "collection": POST, "rkey": "latest"}).to_string(),
    )
    .unwrap();
    assert_eq!(status, 200, "{reply}");

    // The server stops and takes its socket with it; the same commands,
    // now opening the store, print the same (but for `log`, `stats` and
    // `check`, which see the two commits since).
    assert!(server.terminate(), "the server did not stop cleanly");
    assert!(!tmp.path().join("data").join(store::READ_SOCKET).exists());
    for (args, before) in commands.iter().zip(&through) {
        let out = run(store, args, &[]);
        assert!(!read_through(&out), "{args:?}: {out:?}");
        if ["log", "stats", "check"].contains(&args[0]) {
            continue;
        }
        assert_eq!(
            String::from_utf8_lossy(before),
            String::from_utf8_lossy(&out.stdout),
            "{args:?}: through the server, then after it stopped"
        );
    }
}
