//! Accounts in a store: handles and DIDs are unique (handles whatever
//! their case), a password matches only its account, and a session is
//! open until it is rotated past its grace or closed.

use std::sync::Arc;

use accounts::{
    Accounts, Error, account::Status, password, sessions::Session, storage::NewAccount,
};
use store::{MemoryKv, Store};

fn alice<'a>(handle: &'a str, did: &'a str) -> NewAccount<'a> {
    NewAccount {
        did,
        handle,
        email: Some("alice@example.com"),
        password_hash: password::hash("alice's password", [1; 16]).unwrap(),
        created_at: "2026-11-27T00:00:00Z",
        invite_code: None,
        announce: None,
    }
}

fn store() -> Arc<Store<MemoryKv>> {
    Arc::new(Store::new(MemoryKv::new()))
}

#[tokio::test]
async fn handles_and_dids_are_unique() {
    let accounts = Accounts::new(store());
    let a = accounts
        .create(alice("Alice.Example.com", "did:web:alice.example.com"))
        .await
        .unwrap();
    assert_eq!(a.handle, "alice.example.com");
    let again = accounts
        .create(alice("ALICE.example.com", "did:web:other.example.com"))
        .await;
    assert!(matches!(again, Err(Error::HandleTaken(_))), "{again:?}");
    let same_did = accounts
        .create(alice("bob.example.com", "did:web:alice.example.com"))
        .await;
    assert!(matches!(same_did, Err(Error::DidTaken(_))), "{same_did:?}");
    // Found by DID and by handle in any case; unknown names find nothing.
    for name in [
        "did:web:alice.example.com",
        "alice.example.com",
        "ALICE.EXAMPLE.COM",
    ] {
        assert_eq!(
            accounts.find(name).await.unwrap().unwrap().did,
            a.did,
            "{name}"
        );
    }
    assert!(accounts.find("carol.example.com").await.unwrap().is_none());
    assert_eq!(accounts.list().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_password_matches_only_its_account() {
    let accounts = Accounts::new(store());
    accounts
        .create(alice("alice.example.com", "did:web:alice.example.com"))
        .await
        .unwrap();
    let found = accounts.find("alice.example.com").await.unwrap().unwrap();
    assert!(found.password_matches("alice's password"));
    assert!(!found.password_matches("alice's passworD"));
    assert!(!found.password_matches(""));
    accounts
        .set_password_hash(
            "did:web:alice.example.com",
            password::hash("new password", [2; 16]).unwrap(),
        )
        .await
        .unwrap();
    let found = accounts.find("alice.example.com").await.unwrap().unwrap();
    assert!(!found.password_matches("alice's password"));
    assert!(found.password_matches("new password"));
}

#[tokio::test]
async fn statuses_are_remembered_across_opens() {
    let store = store();
    let accounts = Accounts::new(Arc::clone(&store));
    accounts
        .create(alice("alice.example.com", "did:web:alice.example.com"))
        .await
        .unwrap();
    assert_eq!(
        accounts.status("did:web:alice.example.com").await.unwrap(),
        Some(Status::Active)
    );
    accounts
        .set_status("did:web:alice.example.com", Status::Deactivated, None)
        .await
        .unwrap();
    let reopened = Accounts::new(store);
    assert_eq!(
        reopened.status("did:web:alice.example.com").await.unwrap(),
        Some(Status::Deactivated)
    );
    assert_eq!(
        reopened.status("did:web:nobody.example.com").await.unwrap(),
        None
    );
}

#[tokio::test]
async fn sessions_open_rotate_and_close() {
    let accounts = Accounts::new(store());
    let did = "did:web:alice.example.com";
    let session = |exp| Session {
        did: did.to_owned(),
        exp,
        app_password: None,
    };
    let open = |jti: &'static str, who: &'static str, now: u64| {
        let accounts = &accounts;
        async move { accounts.session(jti, who, now).await.unwrap().is_some() }
    };
    accounts.open_session("one", &session(1_000)).await.unwrap();
    assert!(open("one", did, 10).await);
    assert!(!open("one", "did:web:bob.example.com", 10).await);
    assert!(!open("one", did, 1_000).await, "expired");
    accounts
        .rotate_session("one", "two", &session(2_000), 100)
        .await
        .unwrap();
    let grace = accounts::sessions::REFRESH_GRACE_SECS;
    assert!(open("one", did, 100 + grace - 1).await);
    assert!(!open("one", did, 100 + grace).await);
    assert!(open("two", did, 500).await);
    accounts.close_session("two").await.unwrap();
    assert!(!open("two", did, 500).await);
}
