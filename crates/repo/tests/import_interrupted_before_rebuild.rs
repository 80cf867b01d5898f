//! An import whose index rebuild fails after its commit landed (a crash or
//! a storage error at that point) leaves the repository saying so: queries
//! refuse to answer from indexes that describe the old records, in that
//! process and after a restart, `check` names it, and `rebuild_indexes`
//! brings the indexes back to what the records say.

use crate::common;

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use keycodec::{RecordType, records::decode_key};
use repo::{Env, Error, IndexKind, Repos};
use serde_json::{Value, json};
use store::{Kv, MemoryKv, Store, WriteOp};

const DID: &str = "did:example:interrupted-import";
const POSTS: &str = "app.test.post";
const LANGS: [&str; 3] = ["en", "fr", "pt"];

/// The in-memory store, except that once armed it refuses every write
/// that puts index data (bitmap containers, column mappings): an import's
/// commit lands, its rebuild does not.
#[derive(Clone)]
struct NoIndexWrites {
    inner: MemoryKv,
    armed: Arc<AtomicBool>,
}

impl Kv for NoIndexWrites {
    fn blobs(&self) -> store::Blobs {
        self.inner.blobs()
    }

    async fn get(&self, key: &[u8]) -> Result<Option<bytes::Bytes>, store::Error> {
        self.inner.get(key).await
    }

    async fn apply(&self, ops: Vec<WriteOp>) -> Result<store::Durability, store::Error> {
        let index_data = ops.iter().any(|op| {
            matches!(op, WriteOp::Put(key, _) if decode_key(key).is_ok_and(|k| matches!(
                k.record_type(),
                RecordType::Bitmap | RecordType::Column | RecordType::ColumnRkey
            )))
        });
        if index_data && self.armed.load(Ordering::SeqCst) {
            return Err(store::Error::Unavailable("index writes refused".into()));
        }
        self.inner.apply(ops).await
    }

    async fn scan(
        &self,
        range: &keycodec::KeyRange,
        reverse: bool,
        limit: usize,
    ) -> Result<Vec<(bytes::Bytes, bytes::Bytes)>, store::Error> {
        self.inner.scan(range, reverse, limit).await
    }
}

fn count(model: &BTreeMap<String, Value>, lang: &str) -> u64 {
    model.values().filter(|v| v["lang"] == lang).count() as u64
}

#[test]
fn an_interrupted_rebuild_is_refused_reported_and_resumed() {
    common::rt().block_on(async {
        // The file: 400 posts.
        let source = common::repos();
        let repo = source.create(DID).await.unwrap();
        let model: BTreeMap<String, Value> = (0..400)
            .map(|i| (format!("p{i:04}"), json!({"lang": LANGS[i % 3]})))
            .collect();
        let writes = common::creates(POSTS, &model);
        repo.apply_writes(writes, None).await.unwrap();
        let (car, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();

        // The target: an index on `lang` and no records yet (a later clock:
        // the file replaces its first commit).
        let kv = NoIndexWrites {
            inner: MemoryKv::new(),
            armed: Arc::new(AtomicBool::new(false)),
        };
        let clock = Arc::new(AtomicU64::new(1_767_225_600_000_000 + 3_600_000_000));
        let env = move || {
            let clock = Arc::clone(&clock);
            Env::new(move || clock.fetch_add(1000, Ordering::Relaxed), 9)
        };
        let target = Repos::new(Arc::new(Store::new(kv.clone())), env());
        let repo = target.create(DID).await.unwrap();
        repo.add_index(POSTS, "lang", IndexKind::Keyword, |_| {})
            .await
            .unwrap();
        assert_eq!(repo.count(POSTS, Some(r#"lang = "en""#)).await.unwrap(), 0);
        drop(repo);

        kv.armed.store(true, Ordering::SeqCst);
        let failed = target.import_car(&car[..], Some(DID)).await;
        assert!(
            matches!(failed, Err(Error::Store(store::Error::Unavailable(_)))),
            "{failed:?}"
        );
        kv.armed.store(false, Ordering::SeqCst);

        // The commit landed; the indexes are not to be used, here or after
        // a restart.
        let restarted = Repos::new(Arc::new(Store::new(kv.clone())), env());
        for repos in [&target, &restarted] {
            let repo = repos.open(DID).await.unwrap();
            assert_eq!(repo.count(POSTS, None).await.unwrap(), 400);
            let refused = repo.count(POSTS, Some(r#"lang = "en""#)).await;
            assert!(
                matches!(&refused, Err(Error::IndexRebuildPending(id)) if id == DID),
                "{refused:?}"
            );
            assert!(
                repo.query(POSTS, Some(r#"lang = "fr""#), None, false, 10)
                    .await
                    .is_err()
            );
        }
        let check = restarted.check(DID, |_| {}).await.unwrap();
        assert!(
            check
                .problems
                .iter()
                .any(|p| p.contains("a rebuild is pending")),
            "{:#?}",
            check.problems
        );

        // Resumed: the indexes say what the imported records say.
        let repo = restarted.open(DID).await.unwrap();
        assert_eq!(repo.rebuild_indexes(|_| {}).await.unwrap(), 400);
        for lang in LANGS {
            assert_eq!(
                repo.count(POSTS, Some(&format!("lang = {lang:?}")))
                    .await
                    .unwrap(),
                count(&model, lang),
                "{lang}"
            );
        }
        assert!(restarted.check(DID, |_| {}).await.unwrap().is_intact());
        // The other handle sees it too (the epoch moved).
        let repo = target.open(DID).await.unwrap();
        assert_eq!(
            repo.count(POSTS, Some(r#"lang = "pt""#)).await.unwrap(),
            count(&model, "pt")
        );
    });
}
