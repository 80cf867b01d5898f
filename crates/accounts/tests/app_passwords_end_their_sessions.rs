//! App passwords: unique by name per account, limited in number, and
//! revoking one closes the sessions opened with it, and only those.

use std::sync::Arc;

use accounts::{
    Accounts, Error,
    app_passwords::{AppPassword, MAX_APP_PASSWORDS},
    password,
    sessions::Session,
    storage::NewAccount,
};
use store::{MemoryKv, Store};

const ALICE: &str = "did:web:alice.example.com";

#[tokio::test]
async fn revoking_an_app_password_closes_its_sessions_only() {
    let accounts = Accounts::new(Arc::new(Store::new(MemoryKv::new())));
    accounts
        .create(NewAccount {
            did: ALICE,
            handle: "alice.example.com",
            email: None,
            password_hash: password::hash("pw", [1; 16]).unwrap(),
            created_at: "2026-11-27T00:00:00Z",
            invite_code: None,
            announce: None,
        })
        .await
        .unwrap();
    let hash = password::hash("abcd-efgh-ijkl-mnop", [3; 16]).unwrap();
    let app = |name: &str| AppPassword::new(name, "2026-11-27T00:00:00Z", false, hash.clone());
    accounts.add_app_password(ALICE, &app("bot")).await.unwrap();
    let again = accounts.add_app_password(ALICE, &app("bot")).await;
    assert!(
        matches!(again, Err(Error::AppPasswordExists(_))),
        "{again:?}"
    );
    let nobody = accounts
        .add_app_password("did:web:nobody.example.com", &app("bot"))
        .await;
    assert!(
        matches!(nobody, Err(Error::AccountNotFound(_))),
        "{nobody:?}"
    );
    let stored = accounts.app_passwords(ALICE).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].matches("abcd-efgh-ijkl-mnop"));
    assert!(!stored[0].matches("abcd-efgh-ijkl-mnoq"));

    let session = |app_password: Option<&str>| Session {
        did: ALICE.to_owned(),
        exp: 10_000,
        app_password: app_password.map(str::to_owned),
    };
    accounts
        .open_session("by-bot", &session(Some("bot")))
        .await
        .unwrap();
    accounts
        .open_session("by-password", &session(None))
        .await
        .unwrap();
    accounts.revoke_app_password(ALICE, "bot").await.unwrap();
    assert!(
        accounts
            .session("by-bot", ALICE, 1)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        accounts
            .session("by-password", ALICE, 1)
            .await
            .unwrap()
            .is_some()
    );
    assert!(accounts.app_passwords(ALICE).await.unwrap().is_empty());
    let twice = accounts.revoke_app_password(ALICE, "bot").await;
    assert!(
        matches!(twice, Err(Error::AppPasswordNotFound(_))),
        "{twice:?}"
    );

    // At most MAX_APP_PASSWORDS.
    for i in 0..MAX_APP_PASSWORDS {
        accounts
            .add_app_password(ALICE, &app(&format!("app {i}")))
            .await
            .unwrap();
    }
    let one_more = accounts.add_app_password(ALICE, &app("one more")).await;
    assert!(
        matches!(one_more, Err(Error::TooManyAppPasswords(_))),
        "{one_more:?}"
    );
    // Deleting the account ends everything it had.
    accounts.delete(ALICE, None).await.unwrap();
    assert!(
        accounts
            .session("by-password", ALICE, 1)
            .await
            .unwrap()
            .is_none()
    );
    assert!(accounts.app_passwords(ALICE).await.unwrap().is_empty());
}
