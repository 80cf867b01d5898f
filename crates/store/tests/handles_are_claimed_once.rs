//! Handle claims (`store::HandleClaims`): of many tasks claiming one handle
//! for different DIDs at once exactly one makes the claim and the others
//! see it held by that DID; a held claim is replaced only on the version
//! read (of two takers exactly one wins); a claim is released only by the
//! DID it names; the age of a claim grows with the object store's clock.

use std::{sync::Arc, time::Duration};

use slatedb::object_store::{ObjectStore, memory::InMemory};
use store::{Claim, HandleClaims};

fn claims() -> HandleClaims {
    let shared: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    HandleClaims::beside(shared, "bucket-prefix/db")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_of_many_claims_a_handle() {
    let claims = claims();
    for round in 0..20 {
        let handle = format!("h{round}.example.com");
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let claims = claims.clone();
                let handle = handle.clone();
                tokio::spawn(async move {
                    let did = format!("did:web:d{i}.example");
                    (did.clone(), claims.claim(&handle, &did).await.unwrap())
                })
            })
            .collect();
        let mut made = Vec::new();
        let mut held_by = Vec::new();
        for task in tasks {
            match task.await.unwrap() {
                (did, Claim::Made) => made.push(did),
                (_, Claim::Held(held)) => held_by.push(held.did),
            }
        }
        assert_eq!(made.len(), 1, "round {round}: {made:?}");
        assert!(held_by.iter().all(|did| *did == made[0]), "{held_by:?}");
        let read = claims.read(&handle).await.unwrap().unwrap();
        assert_eq!(read.did, made[0]);
    }
    assert!(claims.read("nobody.example.com").await.unwrap().is_none());
}

#[tokio::test]
async fn a_claim_is_replaced_on_its_version_once() {
    let claims = claims();
    let handle = "ann.example.com";
    assert_eq!(
        claims.claim(handle, "did:web:a").await.unwrap(),
        Claim::Made
    );
    let Claim::Held(held) = claims.claim(handle, "did:web:b").await.unwrap() else {
        panic!("the claim is held");
    };
    assert_eq!(held.did, "did:web:a");
    // Two takers of the version they read: the first wins, the second's
    // version is gone.
    assert!(claims.take_over(handle, &held, "did:web:b").await.unwrap());
    assert!(!claims.take_over(handle, &held, "did:web:c").await.unwrap());
    assert_eq!(claims.read(handle).await.unwrap().unwrap().did, "did:web:b");

    // Released only by the DID it names; then free for anyone.
    claims.release(handle, "did:web:a").await.unwrap();
    assert_eq!(claims.read(handle).await.unwrap().unwrap().did, "did:web:b");
    claims.release(handle, "did:web:b").await.unwrap();
    assert!(claims.read(handle).await.unwrap().is_none());
    assert_eq!(
        claims.claim(handle, "did:web:c").await.unwrap(),
        Claim::Made
    );
}

#[tokio::test]
async fn a_claims_age_follows_the_object_stores_clock() {
    let claims = claims();
    claims
        .claim("old.example.com", "did:web:old")
        .await
        .unwrap();
    let young = claims.read("old.example.com").await.unwrap().unwrap().age;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let older = claims.read("old.example.com").await.unwrap().unwrap().age;
    assert!(
        older >= young + Duration::from_millis(250),
        "{young:?} then {older:?}"
    );
    assert!(young < Duration::from_millis(250), "{young:?}");
}
