//! Adding a Lexicon that no record could satisfy (here `minimum` above
//! `maximum`, beside a sound document) is refused with the field named,
//! and nothing of the batch is stored.

use crate::common;

use serde_json::json;

#[test]
fn a_contradictory_lexicon_is_refused_whole() {
    common::rt().block_on(async {
        let repos = common::repos();
        let repo = repos.create("did:web:lexicons").await.unwrap();
        let sound = json!({"lexicon": 1, "id": "app.test.sound", "defs": {"main": {
            "type": "record", "key": "tid",
            "record": {"type": "object", "properties": {"n": {"type": "integer"}}}}}});
        let contradictory = json!({"lexicon": 1, "id": "app.test.bad", "defs": {"main": {
            "type": "record", "key": "tid",
            "record": {"type": "object", "properties": {
                "n": {"type": "integer", "minimum": 5, "maximum": 1}}}}}});
        let refused = repo
            .add_lexicons_with(vec![sound, contradictory], |_, _| {})
            .await;
        match refused {
            Err(repo::Error::InvalidLexicon(m)) => assert!(
                m.contains("app.test.bad")
                    && m.contains("defs.main.record.properties.n.minimum is 5, above maximum 1"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(repo.lexicons().len(), 0, "nothing of the batch is stored");
    });
}
