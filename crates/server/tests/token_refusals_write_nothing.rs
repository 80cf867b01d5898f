//! Property: whatever credential a request carries — none, another
//! account's token, one tampered with, expired, of another audience or
//! secret, a refresh token, an app password's token where the account is
//! managed, or a revoked refresh token — a write it may not make is
//! refused and writes nothing, and the writes it may make land. Checked
//! against a model (who may write where) over random sequences of
//! requests; the record counts are compared after every sequence.

use crate::common;

use std::{collections::BTreeMap, sync::atomic::Ordering};

use accounts::tokens::{ACCESS_SCOPE, APP_PASS_SCOPE, Tokens};
use common::{
    TOKEN, TestServer,
    sessions::{SERVER_DID, call, clock, sessions},
};
use proptest::prelude::*;
use serde_json::{Value, json};
use server::Config;
use store::MemoryKv;

const ALICE: &str = "did:web:alice.example.com";
const BOB: &str = "did:web:bob.example.com";
const TTL: u64 = 600;

/// A credential a request may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential {
    None,
    Admin,
    AliceAccess,
    AliceAppPassword,
    BobAccess,
    Tampered,
    Expired,
    WrongAudience,
    OtherSecret,
    AliceRefresh,
    RevokedRefresh,
}

/// What a request tries.
#[derive(Debug, Clone, Copy)]
enum Request {
    CreateRecord { into_bob: bool },
    ApplyWrites { into_bob: bool },
    CreateAppPassword,
    Refresh,
}

fn credential() -> impl Strategy<Value = Credential> {
    use Credential as C;
    prop::sample::select(vec![
        C::None,
        C::Admin,
        C::AliceAccess,
        C::AliceAppPassword,
        C::BobAccess,
        C::Tampered,
        C::Expired,
        C::WrongAudience,
        C::OtherSecret,
        C::AliceRefresh,
        C::RevokedRefresh,
    ])
}

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
        any::<bool>().prop_map(|into_bob| Request::CreateRecord { into_bob }),
        any::<bool>().prop_map(|into_bob| Request::ApplyWrites { into_bob }),
        Just(Request::CreateAppPassword),
        Just(Request::Refresh),
    ]
}

/// The tokens of each credential, minted through the server where it
/// issues them and with the tokens crate where no server would.
struct Minted {
    by_credential: BTreeMap<&'static str, String>,
}

impl Minted {
    fn get(&self, c: Credential) -> Option<String> {
        match c {
            Credential::None => None,
            Credential::Admin => Some(TOKEN.to_owned()),
            other => self
                .by_credential
                .get(format!("{other:?}").as_str())
                .cloned(),
        }
    }
}

/// The model: whether `c` may make `r`.
fn allowed(c: Credential, r: Request) -> bool {
    use Credential as C;
    match r {
        Request::CreateRecord { into_bob } | Request::ApplyWrites { into_bob } => match c {
            C::Admin => true,
            C::AliceAccess | C::AliceAppPassword => !into_bob,
            C::BobAccess => into_bob,
            _ => false,
        },
        Request::CreateAppPassword => matches!(c, C::AliceAccess | C::BobAccess),
        Request::Refresh => c == C::AliceRefresh,
    }
}

async fn count(s: &TestServer, repo: &str) -> usize {
    let (status, out) = call(
        s,
        &format!(
            "com.atproto.repo.listRecords?repo={repo}&collection=app.bsky.feed.post&limit=100"
        ),
        None,
        None,
    )
    .await;
    assert_eq!(status, 200, "{out}");
    out["records"].as_array().map_or(0, Vec::len)
}

async fn send(s: &TestServer, bearer: Option<&str>, r: Request, n: usize) -> (u16, Value) {
    let repo = |into_bob: bool| if into_bob { BOB } else { ALICE };
    let record = json!({"text": format!("write {n}"), "createdAt": "2026-11-27T00:00:00Z"});
    match r {
        Request::CreateRecord { into_bob } => {
            call(
                s,
                "com.atproto.repo.createRecord",
                bearer,
                Some(json!({"repo": repo(into_bob), "collection": "app.bsky.feed.post", "record": record})),
            )
            .await
        }
        Request::ApplyWrites { into_bob } => {
            call(
                s,
                "com.atproto.repo.applyWrites",
                bearer,
                Some(json!({"repo": repo(into_bob), "writes": [{
                    "$type": "com.atproto.repo.applyWrites#create",
                    "collection": "app.bsky.feed.post", "value": record}]})),
            )
            .await
        }
        Request::CreateAppPassword => {
            call(
                s,
                "com.atproto.server.createAppPassword",
                bearer,
                Some(json!({"name": format!("app {n}")})),
            )
            .await
        }
        Request::Refresh => {
            call(s, "com.atproto.server.refreshSession", bearer, Some(json!({}))).await
        }
    }
}

#[test]
fn refused_credentials_write_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let now = clock();
    let config = Config {
        token: Some(TOKEN.into()),
        sessions: Some(sessions(&now, TTL, Default::default())),
        ..Config::default()
    };
    let (s, tokens) = rt.block_on(async {
        let s = TestServer::start(MemoryKv::new(), config).await;
        let mut sessions_of = BTreeMap::new();
        for (handle, password) in [
            ("alice.example.com", "alice-pw"),
            ("bob.example.com", "bob-pw"),
        ] {
            let (status, out) = call(
                &s,
                "com.atproto.server.createAccount",
                Some(TOKEN),
                Some(json!({"handle": handle, "password": password})),
            )
            .await;
            assert_eq!(status, 200, "{out}");
            sessions_of.insert(handle, out);
        }
        let alice = &sessions_of["alice.example.com"];
        let text = |v: &Value, k: &str| v[k].as_str().unwrap().to_owned();
        let (_, app) = call(
            &s,
            "com.atproto.server.createAppPassword",
            Some(&text(alice, "accessJwt")),
            Some(json!({"name": "bot"})),
        )
        .await;
        let (_, app_session) = call(
            &s,
            "com.atproto.server.createSession",
            None,
            Some(json!({"identifier": "alice.example.com", "password": text(&app, "password")})),
        )
        .await;
        // A session logged out: its refresh token is revoked.
        let (_, revoked) = call(
            &s,
            "com.atproto.server.createSession",
            None,
            Some(json!({"identifier": "alice.example.com", "password": "alice-pw"})),
        )
        .await;
        let (status, _) = call(
            &s,
            "com.atproto.server.deleteSession",
            Some(&text(&revoked, "refreshJwt")),
            Some(json!({})),
        )
        .await;
        assert_eq!(status, 200);
        let mut tampered = text(alice, "accessJwt").into_bytes();
        let i = tampered.len() - 3;
        tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
        let at = now.load(Ordering::Relaxed);
        let secret = [7; 32];
        let foreign = |tokens: Tokens, issued: u64, scope: &str| {
            tokens.issue(ALICE, scope, "j", issued).unwrap().access
        };
        let by_credential = BTreeMap::from([
            ("AliceAccess", text(alice, "accessJwt")),
            ("AliceAppPassword", text(&app_session, "accessJwt")),
            (
                "BobAccess",
                text(&sessions_of["bob.example.com"], "accessJwt"),
            ),
            ("Tampered", String::from_utf8(tampered).unwrap()),
            (
                "Expired",
                foreign(
                    Tokens::new(&secret, SERVER_DID),
                    at - 2 * 7200,
                    ACCESS_SCOPE,
                ),
            ),
            (
                "WrongAudience",
                foreign(
                    Tokens::new(&secret, "did:web:elsewhere.example"),
                    at,
                    ACCESS_SCOPE,
                ),
            ),
            (
                "OtherSecret",
                foreign(Tokens::new(&[8; 32], SERVER_DID), at, APP_PASS_SCOPE),
            ),
            ("AliceRefresh", text(alice, "refreshJwt")),
            ("RevokedRefresh", text(&revoked, "refreshJwt")),
        ]);
        (s, Minted { by_credential })
    });
    // A refresh leaves the old refresh token a grace of minutes; the clock
    // stands still here, so AliceRefresh stays usable, as the model says.
    let written = std::cell::RefCell::new(BTreeMap::from([(ALICE, 0usize), (BOB, 0usize)]));
    let n = std::cell::Cell::new(0usize);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    runner
        .run(
            &prop::collection::vec((credential(), request()), 1..8),
            |steps| {
                rt.block_on(async {
                    for (c, r) in steps {
                        n.set(n.get() + 1);
                        let bearer = tokens.get(c);
                        let (status, out) = send(&s, bearer.as_deref(), r, n.get()).await;
                        let ok = status == 200;
                        prop_assert_eq!(ok, allowed(c, r), "{:?} {:?}: {} {}", c, r, status, out);
                        if !ok {
                            prop_assert!(
                                status == 400 || status == 401,
                                "{:?} {:?}: refused as {} {}",
                                c,
                                r,
                                status,
                                out
                            );
                        }
                        if let (
                            true,
                            Request::CreateRecord { into_bob } | Request::ApplyWrites { into_bob },
                        ) = (ok, r)
                        {
                            *written
                                .borrow_mut()
                                .get_mut(if into_bob { BOB } else { ALICE })
                                .unwrap() += 1;
                        }
                    }
                    let expected = written.borrow().clone();
                    prop_assert_eq!(count(&s, ALICE).await, expected[ALICE].min(100));
                    prop_assert_eq!(count(&s, BOB).await, expected[BOB].min(100));
                    Ok(())
                })
            },
        )
        .unwrap();
    rt.block_on(s.stop());
}
