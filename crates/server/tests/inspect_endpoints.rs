//! The `dev.datarepo.*` endpoints the web interface reads (commit log,
//! commit changes, record history and versions, shards, the way to a key,
//! blocks, collections and counts) agree with a model of the writes made.

use crate::common;

use std::collections::BTreeMap;

use common::{DID as REPO, TestServer};
use serde_json::{Value, json};
use testkit::Rng;

const COLLECTIONS: [&str; 2] = ["app.example.a", "app.example.b"];

/// What one commit did to one record: (action, "collection/rkey", new, prev).
type Op = (String, String, Option<String>, Option<String>);

#[derive(Default)]
struct Model {
    /// "collection/rkey" → CID at the head.
    state: BTreeMap<String, String>,
    /// Every commit made through the API, oldest first: (rev, its ops).
    commits: Vec<(String, Vec<Op>)>,
    /// The state after each commit, by rev.
    states: BTreeMap<String, BTreeMap<String, String>>,
}

impl Model {
    fn apply(&mut self, rev: &str, ops: Vec<Op>) {
        for (_, key, new, _) in &ops {
            match new {
                Some(cid) => self.state.insert(key.clone(), cid.clone()),
                None => self.state.remove(key),
            };
        }
        let mut sorted = ops;
        sorted.sort_by(|a, b| a.1.cmp(&b.1));
        self.commits.push((rev.to_owned(), sorted));
        self.states.insert(rev.to_owned(), self.state.clone());
    }
}

fn split(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap()
}

async fn write(s: &TestServer, model: &mut Model, rng: &mut Rng, n: u64) {
    let keys: Vec<String> = (0..12)
        .flat_map(|i| COLLECTIONS.map(|c| format!("{c}/r{i}")))
        .collect();
    let batch = if rng.below(4) == 0 {
        1 + rng.index(4)
    } else {
        1
    };
    let mut chosen: Vec<String> = Vec::new();
    while chosen.len() < batch {
        let k = keys[rng.index(keys.len())].clone();
        if !chosen.contains(&k) {
            chosen.push(k);
        }
    }
    let mut writes = Vec::new();
    let mut planned = Vec::new();
    for key in &chosen {
        let (collection, rkey) = split(key);
        let prev = model.state.get(key).cloned();
        let value = json!({"n": n, "key": key});
        let (action, w) = match &prev {
            Some(_) if rng.below(3) == 0 => (
                "delete",
                json!({"$type": "com.atproto.repo.applyWrites#delete", "collection": collection, "rkey": rkey}),
            ),
            Some(_) => (
                "update",
                json!({"$type": "com.atproto.repo.applyWrites#update", "collection": collection, "rkey": rkey, "value": value}),
            ),
            None => (
                "create",
                json!({"$type": "com.atproto.repo.applyWrites#create", "collection": collection, "rkey": rkey, "value": value}),
            ),
        };
        writes.push(w);
        planned.push((action.to_owned(), key.clone(), prev));
    }
    let (status, out) = s
        .post(
            "com.atproto.repo.applyWrites",
            &json!({"repo": REPO, "writes": writes}),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    let rev = out["commit"]["rev"].as_str().unwrap().to_owned();
    let ops = planned
        .into_iter()
        .zip(out["results"].as_array().unwrap())
        .map(|((action, key, prev), result)| {
            let new = result["cid"].as_str().map(str::to_owned);
            (action, key, new, prev)
        })
        .collect();
    model.apply(&rev, ops);
}

async fn get(s: &TestServer, method: &str, query: &[(&str, &str)]) -> Value {
    let (status, body) = s.get(method, query).await;
    assert_eq!(status, 200, "{method} {query:?}: {body}");
    body
}

fn ops_of(v: &Value) -> Vec<Op> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|op| {
            (
                op["action"].as_str().unwrap().to_owned(),
                format!(
                    "{}/{}",
                    op["collection"].as_str().unwrap(),
                    op["rkey"].as_str().unwrap()
                ),
                op["cid"].as_str().map(str::to_owned),
                op["prev"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// Every (key, record CID) of the Pail under `cid`, walked through
/// `getShard` pages of `limit` entries and its links.
async fn walk(
    s: &TestServer,
    cid: &str,
    prefix: &str,
    limit: &str,
    out: &mut BTreeMap<String, String>,
) {
    let mut cursor: Option<String> = None;
    loop {
        let mut q = vec![
            ("repo", REPO),
            ("cid", cid),
            ("limit", limit),
            ("children", "true"),
        ];
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let shard = get(s, "dev.datarepo.getShard", &q).await;
        assert!(shard["size"].as_u64().unwrap() <= shard["maxSize"].as_u64().unwrap());
        for e in shard["entries"].as_array().unwrap() {
            let key = format!("{prefix}{}", e["key"].as_str().unwrap());
            if let Some(data) = e["data"].as_str() {
                out.insert(key.clone(), data.to_owned());
            }
            if let Some(link) = e["link"].as_str() {
                // The child's summary is the child's own.
                let child = get(
                    s,
                    "dev.datarepo.getShard",
                    &[("repo", REPO), ("cid", link), ("limit", "1")],
                )
                .await;
                assert_eq!(
                    e["child"],
                    json!({"entryCount": child["entryCount"], "size": child["size"]})
                );
                Box::pin(walk(s, link, &key, limit, out)).await;
            }
        }
        match shard["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return,
        }
    }
}

#[tokio::test]
async fn inspection_endpoints_agree_with_a_model_of_the_writes() {
    let s = TestServer::memory().await;
    let mut model = Model::default();
    let mut rng = Rng(0x1e5_7ab1e);
    for n in 0..160 {
        write(&s, &mut model, &mut rng, n).await;
    }
    let repo = [("repo", REPO)];

    // The log, paged 7 at a time, newest first: the repository's first
    // (empty) commit, then one per write.
    let mut revs = Vec::new();
    // Each commit's change counts, as listCommits gives them with counts=true.
    let mut listed_counts = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q = vec![("repo", REPO), ("limit", "7"), ("counts", "true")];
        if let Some(c) = &cursor {
            q.push(("cursor", c));
        }
        let page = get(&s, "dev.datarepo.listCommits", &q).await;
        for c in page["commits"].as_array().unwrap() {
            revs.push(c["rev"].as_str().unwrap().to_owned());
            listed_counts.insert(c["rev"].as_str().unwrap().to_owned(), c["counts"].clone());
        }
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let mut expected: Vec<String> = model.commits.iter().map(|(r, _)| r.clone()).collect();
    expected.reverse();
    assert_eq!(revs[..revs.len() - 1], expected[..]);
    let stats = get(&s, "dev.datarepo.getRepoStats", &repo).await;
    assert_eq!(stats["commits"], json!(revs.len()));
    assert_eq!(stats["records"], json!(model.state.len()));
    for (i, c) in COLLECTIONS.iter().enumerate() {
        let n = model
            .state
            .keys()
            .filter(|k| k.starts_with(&format!("{c}/")))
            .count();
        assert_eq!(
            stats["collections"][i],
            json!({"collection": c, "records": n})
        );
    }

    // Each commit's changes are the writes it made.
    for (rev, ops) in &model.commits {
        let got = get(
            &s,
            "dev.datarepo.getCommit",
            &[("repo", REPO), ("rev", rev)],
        )
        .await;
        assert_eq!(got["commit"]["rev"], json!(rev));
        // `prevRev`: the commit before it in the log (newest first).
        let at = revs.iter().position(|r| r == rev).unwrap();
        assert_eq!(
            got["commit"]["prevRev"],
            json!(revs[at + 1]),
            "commit {rev}"
        );
        assert_eq!(ops_of(&got["ops"]), *ops, "commit {rev}");
        assert!(got.get("cursor").is_none());
        for action in ["create", "update", "delete"] {
            let n = ops.iter().filter(|o| o.0 == action).count();
            assert_eq!(got["counts"][action], json!(n), "commit {rev}");
            assert_eq!(listed_counts[rev][action], json!(n), "listed commit {rev}");
        }
        // The same changes a page of one at a time.
        let mut paged = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q = vec![("repo", REPO), ("rev", rev.as_str()), ("limit", "1")];
            if let Some(c) = &cursor {
                q.push(("cursor", c));
            }
            let page = get(&s, "dev.datarepo.getCommit", &q).await;
            assert_eq!(page["counts"], got["counts"]);
            paged.extend(ops_of(&page["ops"]));
            match page["cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(paged, *ops, "commit {rev}, paged");
        let bare = get(
            &s,
            "dev.datarepo.getCommit",
            &[("repo", REPO), ("rev", rev), ("ops", "false")],
        )
        .await;
        assert_eq!(bare["commit"], got["commit"]);
        assert!(bare.get("ops").is_none());
    }

    // Each record's history is the model's, newest first, across pages
    // of 5 commits.
    for key in (0..12).flat_map(|i| COLLECTIONS.map(|c| format!("{c}/r{i}"))) {
        let (collection, rkey) = split(&key);
        let mut want: Vec<(String, String, Option<String>)> = model
            .commits
            .iter()
            .filter_map(|(rev, ops)| {
                let op = ops.iter().find(|o| o.1 == key)?;
                Some((rev.clone(), op.0.clone(), op.2.clone()))
            })
            .collect();
        want.reverse();
        let mut got = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut q = vec![
                ("repo", REPO),
                ("collection", collection),
                ("rkey", rkey),
                ("limit", "5"),
            ];
            if let Some(c) = &cursor {
                q.push(("cursor", c));
            }
            let page = get(&s, "dev.datarepo.getRecordHistory", &q).await;
            for v in page["versions"].as_array().unwrap() {
                got.push((
                    v["commit"]["rev"].as_str().unwrap().to_owned(),
                    v["action"].as_str().unwrap().to_owned(),
                    v["cid"].as_str().map(str::to_owned),
                ));
            }
            match page["cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(got, want, "history of {key}");
        // Each version, read back at its rev.
        for (rev, action, cid) in want.iter().take(3) {
            let (status, at) = s
                .get(
                    "dev.datarepo.getRecord",
                    &[
                        ("repo", REPO),
                        ("collection", collection),
                        ("rkey", rkey),
                        ("rev", rev),
                    ],
                )
                .await;
            if action == "delete" {
                assert_eq!(
                    (status, at["error"].as_str()),
                    (400, Some("RecordNotFound"))
                );
            } else {
                assert_eq!(status, 200, "{at}");
                assert_eq!(at["cid"].as_str(), cid.as_deref());
                assert_eq!(at["value"]["key"], json!(key));
                assert!(at["size"].as_u64().unwrap() > 0);
            }
        }
    }

    // The head's Pail, walked shard by shard (pages of 3 entries), holds
    // exactly the model's records.
    let head = get(
        &s,
        "dev.datarepo.listCommits",
        &[("repo", REPO), ("limit", "1")],
    )
    .await;
    let root = head["commits"][0]["data"].as_str().unwrap().to_owned();
    let mut walked = BTreeMap::new();
    walk(&s, &root, "", "3", &mut walked).await;
    assert_eq!(walked, model.state);

    // The way to every key (present or not) ends at its record or where it
    // would be, through shards that link one to the next.
    for key in (0..14).flat_map(|i| COLLECTIONS.map(|c| format!("{c}/r{i}"))) {
        let (collection, rkey) = split(&key);
        let way = get(
            &s,
            "dev.datarepo.getPailPath",
            &[("repo", REPO), ("collection", collection), ("rkey", rkey)],
        )
        .await;
        assert_eq!(way["root"], json!(root));
        assert_eq!(way["found"], json!(model.state.contains_key(&key)), "{key}");
        assert_eq!(
            way["cid"].as_str(),
            model.state.get(&key).map(String::as_str)
        );
        let steps = way["steps"].as_array().unwrap();
        assert_eq!(steps[0]["shard"], json!(root));
        let mut prefix = String::new();
        for (i, step) in steps.iter().enumerate() {
            assert_eq!(step["prefix"], json!(prefix));
            let entry = step["entry"].as_str().unwrap();
            assert!(key.starts_with(&format!("{prefix}{entry}")));
            if let Some(next) = steps.get(i + 1) {
                let shard = get(
                    &s,
                    "dev.datarepo.getShard",
                    &[
                        ("repo", REPO),
                        ("cid", step["shard"].as_str().unwrap()),
                        ("limit", "5000"),
                    ],
                )
                .await;
                let link = shard["entries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|e| e["key"] == json!(entry))
                    .unwrap()["link"]
                    .clone();
                assert_eq!(link, next["shard"]);
            }
            prefix.push_str(entry);
        }
        if model.state.contains_key(&key) {
            assert_eq!(prefix, key);
        }
    }

    // Blocks: a record's content; an unknown CID is a clear error.
    let (key, cid) = model.state.iter().next().unwrap();
    let block = get(&s, "dev.datarepo.getBlock", &[("repo", REPO), ("cid", cid)]).await;
    assert_eq!(
        (block["codec"].as_str(), block["value"]["key"].as_str()),
        (Some("dag-cbor"), Some(key.as_str()))
    );
    let missing = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm";
    let (status, err) = s
        .get("dev.datarepo.getBlock", &[("repo", REPO), ("cid", missing)])
        .await;
    assert_eq!(
        (status, err["error"].as_str()),
        (400, Some("BlockNotFound"))
    );
    let (status, err) = s
        .get("dev.datarepo.getShard", &[("repo", REPO), ("cid", missing)])
        .await;
    assert_eq!(
        (status, err["error"].as_str()),
        (400, Some("ShardNotFound"))
    );
    // A record block is not a shard.
    let (status, err) = s
        .get("dev.datarepo.getShard", &[("repo", REPO), ("cid", cid)])
        .await;
    assert_eq!(
        (status, err["error"].as_str()),
        (400, Some("ShardNotFound")),
        "{err}"
    );

    // Collections as declared (written to, so key type any, undeclared).
    let cols = get(&s, "dev.datarepo.describeCollections", &repo).await;
    assert_eq!(
        cols["collections"][0],
        json!({"collection": COLLECTIONS[0], "keyType": "any", "declared": false, "lexicon": false, "indexes": []})
    );
}

#[tokio::test]
async fn inspection_endpoints_reject_bad_parameters() {
    let s = TestServer::memory().await;
    let (status, _) = s
        .post(
            "com.atproto.repo.createRecord",
            &json!({"repo": REPO, "collection": "app.example.a", "record": {"a": 1}}),
        )
        .await;
    assert_eq!(status, 200);
    for (method, query, error) in [
        (
            "dev.datarepo.getCommit",
            vec![("repo", REPO), ("rev", "not-a-rev")],
            "InvalidRequest",
        ),
        (
            "dev.datarepo.getCommit",
            vec![("repo", REPO), ("rev", "2222222222222")],
            "InvalidRequest",
        ),
        (
            "dev.datarepo.listCommits",
            vec![("repo", REPO), ("limit", "0")],
            "InvalidRequest",
        ),
        (
            "dev.datarepo.listCommits",
            vec![("repo", "did:web:nobody.example")],
            "RepoNotFound",
        ),
        (
            "dev.datarepo.getShard",
            vec![("repo", REPO), ("cid", "not-a-cid")],
            "InvalidRequest",
        ),
        (
            "dev.datarepo.getRecordHistory",
            vec![("repo", REPO), ("collection", "not an nsid"), ("rkey", "x")],
            "InvalidRequest",
        ),
        (
            "dev.datarepo.getRecordHistory",
            vec![
                ("repo", REPO),
                ("collection", "app.example.a"),
                ("rkey", "x"),
                ("limit", "2001"),
            ],
            "InvalidRequest",
        ),
        (
            "dev.datarepo.getPailPath",
            vec![
                ("repo", REPO),
                ("collection", "app.example.a"),
                ("rkey", "../x"),
            ],
            "InvalidRequest",
        ),
        (
            "dev.datarepo.getRecord",
            vec![
                ("repo", REPO),
                ("collection", "app.example.a"),
                ("rkey", "nope"),
            ],
            "RecordNotFound",
        ),
        (
            "dev.datarepo.getBlock",
            vec![("repo", REPO)],
            "InvalidRequest",
        ),
        (
            "dev.datarepo.getLexicon",
            vec![("repo", REPO), ("nsid", "app.example.a")],
            "LexiconNotFound",
        ),
    ] {
        let (status, body) = s.get(method, &query).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some(error)),
            "{method} {query:?}: {body}"
        );
        assert!(!body["message"].as_str().unwrap().is_empty());
    }
}
