//! A partitioned store's layout: which partition holds a repository
//! (pinned: changing it would move every repository of every partitioned
//! store), where partitions live, and that a store's partition count is
//! fixed.

use store::{Location, Partitions, SlateKv};

/// Partitions computed outside datarepo, by Python's `hashlib`:
/// `int.from_bytes(hashlib.sha256(id.encode()).digest()[:8], "big") % count`.
const GOLDEN: &[(&str, u32, u32)] = &[
    ("did:web:alice.example.com", 64, 5),
    ("did:web:bob.example.com", 64, 0),
    ("did:plc:ewvi7nxzyoun6zhxrhs64oiz", 64, 5),
    (
        "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme",
        1024,
        903,
    ),
    ("did:web:alice.example.com", 4, 1),
    ("did:web:bob.example.com", 4, 0),
    ("x", 1, 0),
    ("did:web:carol.example.com", 1024, 151),
];

#[test]
fn a_repositorys_partition_is_pinned() {
    for &(id, count, expected) in GOLDEN {
        let partitions = Partitions::new(count).unwrap();
        assert_eq!(partitions.of(id), expected, "{id} of {count}");
    }
}

#[tokio::test]
async fn a_store_is_partitioned_once_and_its_root_is_not_a_database() {
    let dir = testkit::tempdir("partitions");
    let root = Location::Local(dir.path().to_path_buf());
    assert_eq!(Partitions::read(&root).await.unwrap(), None);
    let four = Partitions::new(4).unwrap();
    four.create(&root).await.unwrap();
    // Again with the same count: nothing changes.
    four.create(&root).await.unwrap();
    assert_eq!(Partitions::read(&root).await.unwrap(), Some(four));
    let other = Partitions::new(8).unwrap().create(&root).await.unwrap_err();
    assert!(
        other.to_string().contains("already has 4 partitions"),
        "{other}"
    );
    // The root is no database: opening it as one is refused, a partition opens.
    let refused = SlateKv::open(&root).await.unwrap_err();
    assert!(
        refused.to_string().contains("split into 4 partitions"),
        "{refused}"
    );
    let partition = Partitions::location(&root, 2);
    assert_eq!(partition, Location::Local(dir.path().join("p-0002")));
    let kv = SlateKv::open(&partition).await.unwrap();
    kv.close().await.unwrap();
}

#[tokio::test]
async fn an_unpartitioned_store_cannot_become_partitioned() {
    let dir = testkit::tempdir("partitions");
    let root = Location::Local(dir.path().to_path_buf());
    let kv = SlateKv::open(&root).await.unwrap();
    kv.close().await.unwrap();
    let refused = Partitions::new(4).unwrap().create(&root).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("unpartitioned store is already here"),
        "{refused}"
    );
    assert_eq!(Partitions::read(&root).await.unwrap(), None);
}
