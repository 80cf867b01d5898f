//! A repository's Lexicons: adding, replacing and removing them, and
//! checking a collection's records against its own.
//!
//! A record Lexicon (its `main` is a `record`) lives in its collection's
//! declaration, as before validation existed; any other document (the
//! definitions record Lexicons refer to) under record type `0xF`. Both
//! are compiled into one [`lexicon::Lexicons`] that writes read without
//! waiting for the repository lock.

use std::sync::Arc;

use bytes::Bytes;
use lexicon::{Document, Lexicons};
use rkey::KeyType;
use serde_json::{Value, json};
use store::Kv;

use crate::{
    error::Error,
    repository::state::{Repository, State},
    validation::compile,
};

/// Examples of failing records a report lists, at most.
pub const REPORTED_FAILURES: usize = 5;

/// What adding one Lexicon document did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexiconAdded {
    /// The document's NSID.
    pub nsid: String,
    /// The `type` of its `main` definition, if any.
    pub main: Option<&'static str>,
    /// Whether it replaced a document with the same NSID.
    pub replaced: bool,
    /// For a record Lexicon: the collection's existing records checked.
    pub checked: u64,
    /// How many of those do not validate.
    pub invalid: u64,
    /// The first few that do not.
    pub failures: Vec<InvalidRecord>,
}

/// A record of a collection that does not validate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRecord {
    /// The record key.
    pub rkey: String,
    /// The validator's message.
    pub error: String,
}

impl<K: Kv> Repository<K> {
    /// The repository's Lexicons as of now.
    pub fn lexicons(&self) -> Arc<Lexicons> {
        Arc::clone(&self.lexicons.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Compiles the Lexicons again from `state` and the stored definitions
    /// documents, for the writes after this.
    pub(crate) async fn refresh_lexicons(&self, state: &State) -> Result<(), Error> {
        let others = self.store.lexicons(&self.id).await?;
        let (compiled, _) = compile(
            state
                .collections
                .values()
                .filter_map(|i| i.lexicon.as_ref()),
            &others,
        );
        *self.lexicons.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(compiled);
        Ok(())
    }

    /// Adds (or replaces) Lexicon documents, all or none: a record
    /// Lexicon declares its collection with its record key type (the
    /// collection's existing keys must fit it), any other document is kept
    /// for the record Lexicons that refer to it. Then the existing records
    /// of each record Lexicon's collection are validated and reported, not
    /// rejected.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidLexicon`] naming the document and field at fault
    /// (nothing is added), [`Error::KeyTypeConflict`], or a storage error.
    pub async fn add_lexicons(&self, docs: Vec<Value>) -> Result<Vec<LexiconAdded>, Error> {
        self.add_lexicons_with(docs, |_, _| {}).await
    }

    /// [`Repository::add_lexicons`], calling `progress(collection,
    /// records checked so far)` as the existing records are validated.
    ///
    /// # Errors
    ///
    /// As [`Repository::add_lexicons`].
    pub async fn add_lexicons_with(
        &self,
        docs: Vec<Value>,
        mut progress: impl FnMut(&str, u64),
    ) -> Result<Vec<LexiconAdded>, Error> {
        // Every document is checked before any is stored: all or none.
        let mut parsed = Vec::with_capacity(docs.len());
        for doc in docs {
            let id = doc
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or("a document")
                .to_owned();
            let d =
                Document::parse(doc).map_err(|e| Error::InvalidLexicon(format!("{id}: {e}")))?;
            let contradictions = d.contradictions();
            if !contradictions.is_empty() {
                return Err(Error::InvalidLexicon(format!(
                    "{id}: {}",
                    contradictions.join("; ")
                )));
            }
            if d.is_record() {
                let nsid = rkey::Nsid::new(d.id())?;
                self.existing_keys_fit(&nsid, &record_key(&d)?).await?;
            }
            parsed.push(d);
        }
        let before = self.lexicons();
        let mut out = Vec::with_capacity(parsed.len());
        let mut state = self.state.lock().await;
        for d in &parsed {
            let nsid = rkey::Nsid::new(d.id())?;
            let replaced = before.get(d.id()).is_some();
            if d.is_record() {
                // A record Lexicon replacing a definitions document.
                if replaced && !before.has_record(d.id()) {
                    self.store.put_lexicon(&self.id, d.id(), None).await?;
                }
                let (key, json) = (record_key(d)?, Some(d.json().clone()));
                self.declare_collection(&mut state, &nsid, key, json)
                    .await?;
            } else {
                // A definitions document replacing a record Lexicon: the
                // collection keeps its key type.
                if let Some(info) = state
                    .collections
                    .get(d.id())
                    .filter(|i| i.lexicon.is_some())
                {
                    let key = info.key.clone();
                    self.declare_collection(&mut state, &nsid, key, None)
                        .await?;
                }
                let json = serde_json::to_vec(d.json()).unwrap_or_default();
                self.store
                    .put_lexicon(&self.id, d.id(), Some(Bytes::from(json)))
                    .await?;
            }
            out.push(LexiconAdded {
                nsid: d.id().to_owned(),
                main: d.main_type(),
                replaced,
                checked: 0,
                invalid: 0,
                failures: Vec::new(),
            });
        }
        self.refresh_lexicons(&state).await?;
        drop(state);
        for added in &mut out {
            if added.main == Some("record") {
                let nsid = added.nsid.clone();
                let (checked, invalid, failures) = self
                    .validate_collection_with(&nsid, REPORTED_FAILURES, |n| progress(&nsid, n))
                    .await?;
                added.checked = checked;
                added.invalid = invalid;
                added.failures = failures;
            }
        }
        Ok(out)
    }

    /// What `lexicon add` answers, for the documents [`add_lexicons`]
    /// reported (the CLI's `--json` and `dev.datarepo.putLexicons` print
    /// it): `{"lexicons": [{nsid, type, replaced}, …], "missingRefs": […]}`,
    /// each record Lexicon's entry also with `collection`, `key`, `checked`,
    /// `invalid` and `failures` (`[{rkey, error}]`); with exactly one record
    /// Lexicon, its `collection` and `key` also at the top.
    ///
    /// [`add_lexicons`]: Repository::add_lexicons
    pub async fn lexicons_added_report(&self, added: &[LexiconAdded]) -> Value {
        let collections = self.collections().await;
        let missing = self.lexicons().missing_refs();
        let entries: Vec<Value> = added
            .iter()
            .map(|a| {
                let mut v = json!({"nsid": a.nsid, "type": a.main, "replaced": a.replaced});
                if a.main == Some("record") {
                    let key = collections
                        .iter()
                        .find(|(c, _)| *c == a.nsid)
                        .map(|(_, i)| i.key.to_string());
                    v["collection"] = json!(a.nsid);
                    v["key"] = json!(key);
                    v["checked"] = json!(a.checked);
                    v["invalid"] = json!(a.invalid);
                    v["failures"] = a
                        .failures
                        .iter()
                        .map(|f| json!({"rkey": f.rkey, "error": f.error}))
                        .collect();
                }
                v
            })
            .collect();
        let records: Vec<&Value> = entries
            .iter()
            .filter(|e| e.get("collection").is_some())
            .collect();
        let top = match records.as_slice() {
            [one] => Some((one["collection"].clone(), one["key"].clone())),
            _ => None,
        };
        let mut out = json!({"lexicons": entries, "missingRefs": missing});
        if let Some((collection, key)) = top {
            out["collection"] = collection;
            out["key"] = key;
        }
        out
    }

    /// Removes the Lexicon document `nsid`. A collection it declared stays
    /// declared, with its key type, and is no longer validated.
    ///
    /// # Errors
    ///
    /// [`Error::LexiconNotFound`] or a storage error.
    pub async fn remove_lexicon(&self, nsid: &str) -> Result<(), Error> {
        let lexicons = self.lexicons();
        if lexicons.get(nsid).is_none() {
            return Err(Error::LexiconNotFound(nsid.to_owned()));
        }
        let mut state = self.state.lock().await;
        match state
            .collections
            .get(nsid)
            .filter(|_| lexicons.has_record(nsid))
        {
            Some(info) => {
                let key = info.key.clone();
                self.declare_collection(&mut state, &rkey::Nsid::new(nsid)?, key, None)
                    .await?;
            }
            None => self.store.put_lexicon(&self.id, nsid, None).await?,
        }
        self.refresh_lexicons(&state).await
    }

    /// Validates every record of `collection` against its current record
    /// Lexicon: (records checked, how many fail, the first `limit` that
    /// fail). Nothing is checked when the collection has no record
    /// Lexicon.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn validate_collection(
        &self,
        collection: &str,
        limit: usize,
    ) -> Result<(u64, u64, Vec<InvalidRecord>), Error> {
        self.validate_collection_with(collection, limit, |_| {})
            .await
    }

    async fn validate_collection_with(
        &self,
        collection: &str,
        limit: usize,
        mut progress: impl FnMut(u64),
    ) -> Result<(u64, u64, Vec<InvalidRecord>), Error> {
        let lexicons = self.lexicons();
        let (mut checked, mut invalid, mut failures) = (0, 0, Vec::new());
        if !lexicons.has_record(collection) {
            return Ok((0, 0, failures));
        }
        let mut cursor: Option<String> = None;
        loop {
            let page = self
                .list_records(collection, cursor.as_deref(), false, 1024)
                .await?;
            for (rkey, record) in &page {
                checked += 1;
                if let Err(e) = lexicons.validate_write(collection, &record.to_json()) {
                    invalid += 1;
                    if failures.len() < limit {
                        failures.push(InvalidRecord {
                            rkey: rkey.clone(),
                            error: e.0,
                        });
                    }
                }
            }
            progress(checked);
            match page.last() {
                Some((last, _)) if page.len() == 1024 => cursor = Some(last.clone()),
                _ => break,
            }
        }
        Ok((checked, invalid, failures))
    }
}

fn record_key(d: &Document) -> Result<KeyType, Error> {
    let key = d.record_key().ok_or_else(|| {
        Error::InvalidLexicon(format!(
            "{}: \"defs.main.key\" (the record key type) is missing",
            d.id()
        ))
    })?;
    key.parse()
        .map_err(|e| Error::InvalidLexicon(format!("{}: \"defs.main.key\": {e}", d.id())))
}
