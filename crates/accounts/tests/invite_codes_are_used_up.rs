//! An invite code creates as many accounts as it allows, in the same write
//! as each account, and no more; a disabled or unknown code creates none.

use std::sync::Arc;

use accounts::{Accounts, Error, invites::InviteCode, password, storage::NewAccount};
use store::{MemoryKv, Store};

fn code(code: &str, available: u32, disabled: bool) -> InviteCode {
    InviteCode {
        code: code.to_owned(),
        available,
        disabled,
        for_account: "admin".to_owned(),
        created_by: "admin".to_owned(),
        created_at: "2026-11-27T00:00:00Z".to_owned(),
        uses: Vec::new(),
    }
}

#[tokio::test]
async fn a_code_creates_as_many_accounts_as_it_allows() {
    let accounts = Accounts::new(Arc::new(Store::new(MemoryKv::new())));
    accounts
        .add_invite_codes(&[code("two-uses", 2, false), code("off", 5, true)])
        .await
        .unwrap();
    let hash = password::hash("pw", [2; 16]).unwrap();
    let new = |n: &'static str, with: &'static str| NewAccount {
        did: n,
        handle: &n[8..],
        email: None,
        password_hash: hash.clone(),
        created_at: "2026-11-27T01:00:00Z",
        invite_code: Some(with),
        announce: None,
    };
    for did in ["did:web:a.example.com", "did:web:b.example.com"] {
        accounts.create(new(did, "two-uses")).await.unwrap();
    }
    for (did, with) in [
        ("did:web:c.example.com", "two-uses"),
        ("did:web:d.example.com", "off"),
        ("did:web:e.example.com", "never-made"),
    ] {
        let refused = accounts.create(new(did, with)).await;
        assert!(
            matches!(refused, Err(Error::InvalidInviteCode)),
            "{with}: {refused:?}"
        );
        // Nothing of the refused account was written.
        assert!(accounts.by_did(did).await.unwrap().is_none());
    }
    let codes = accounts.invite_codes().await.unwrap();
    let used: Vec<&str> = codes[1].uses.iter().map(|u| u.used_by.as_str()).collect();
    assert_eq!(codes[1].code, "two-uses");
    assert_eq!(used, ["did:web:a.example.com", "did:web:b.example.com"]);
    assert!(!codes[1].usable());
    assert!(codes[0].uses.is_empty());
}
