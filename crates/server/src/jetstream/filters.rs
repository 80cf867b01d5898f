//! What a `/subscribe` connection asks for (`wantedCollections`,
//! `wantedDids`, `maxMessageSizeBytes`, and datarepo's `where` and
//! `fields`), checked, and the test of each event against it: read from
//! the event's JSON bytes without parsing them whole.

use std::{collections::HashSet, sync::Arc};

/// Most collections a connection may ask for.
const MAX_COLLECTIONS: usize = 100;

/// Most DIDs a connection may ask for.
const MAX_DIDS: usize = 10_000;

/// What a connection asks for, as its query string or an `options_update`
/// gives it.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Wanted {
    #[serde(default)]
    wanted_collections: Vec<String>,
    #[serde(default)]
    wanted_dids: Vec<String>,
    #[serde(default)]
    max_message_size_bytes: u64,
    /// A `--where` expression (datarepo's addition).
    #[serde(default, rename = "where")]
    condition: Option<String>,
    /// Record paths (datarepo's addition).
    #[serde(default)]
    fields: Vec<String>,
}

/// What a connection wants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Filters {
    /// Full NSIDs.
    collections: HashSet<String>,
    /// `prefix.*` entries, as `prefix.`.
    prefixes: Vec<String>,
    dids: HashSet<String>,
    /// 0: no limit.
    max_message_bytes: usize,
    /// What an event's record must satisfy; events without a record
    /// (deletes) pass.
    condition: Option<Arc<repo::RecordCondition>>,
    /// `where` as written (what tells two conditions apart).
    condition_text: Option<String>,
    /// The record paths sent (`None`: the whole record).
    fields: Option<Arc<repo::RecordFields>>,
}

/// What a connection is sent of an event its filters let through.
pub(crate) enum Shaped {
    /// Nothing: its record does not satisfy `where`.
    Skipped,
    /// The event as stored.
    AsStored,
    /// The event with its record cut down to `fields`.
    Reshaped(Vec<u8>),
}

impl Filters {
    pub(crate) fn new(wanted: &Wanted) -> Result<Self, String> {
        let (collections, dids) = (&wanted.wanted_collections, &wanted.wanted_dids);
        if collections.len() > MAX_COLLECTIONS {
            return Err(format!(
                "wantedCollections has {} entries; at most {MAX_COLLECTIONS}",
                collections.len()
            ));
        }
        if dids.len() > MAX_DIDS {
            return Err(format!(
                "wantedDids has {} entries; at most {MAX_DIDS}",
                dids.len()
            ));
        }
        let mut filters = Self {
            max_message_bytes: usize::try_from(wanted.max_message_size_bytes).unwrap_or(usize::MAX),
            ..Self::default()
        };
        for c in collections {
            match c.strip_suffix(".*") {
                Some(prefix) if valid_prefix(prefix) => filters.prefixes.push(format!("{prefix}.")),
                None if rkey::Nsid::new(c).is_ok() => {
                    filters.collections.insert(c.clone());
                }
                _ => {
                    return Err(format!(
                        "wantedCollections: {c:?} is neither an NSID nor an NSID prefix ending in .*"
                    ));
                }
            }
        }
        for d in dids {
            if !d.starts_with("did:") || d.len() > 2048 || d.contains(['"', '\\']) {
                return Err(format!("wantedDids: {d:?} is not a DID"));
            }
            filters.dids.insert(d.clone());
        }
        if let Some(src) = &wanted.condition {
            let condition = repo::RecordCondition::parse(src).map_err(|e| format!("where: {e}"))?;
            filters.condition = Some(Arc::new(condition));
            filters.condition_text = Some(src.clone());
        }
        if !wanted.fields.is_empty() {
            let fields = repo::RecordFields::new(wanted.fields.clone())?;
            filters.fields = Some(Arc::new(fields));
        }
        Ok(filters)
    }

    /// What identifies these filters' events for a shared pass, or `None`
    /// when they share none: no filter at all (the whole stream is theirs)
    /// or `fields` (each connection cuts records to its own encoding).
    pub(super) fn pass_key(&self) -> Option<PassKey> {
        if self.fields.is_some() || *self == Self::default() {
            return None;
        }
        let sorted = |set: &HashSet<String>| {
            let mut v: Vec<String> = set.iter().cloned().collect();
            v.sort_unstable();
            v
        };
        let mut prefixes = self.prefixes.clone();
        prefixes.sort_unstable();
        Some(PassKey {
            collections: sorted(&self.collections),
            prefixes,
            dids: sorted(&self.dids),
            max_message_bytes: self.max_message_bytes,
            condition: self.condition_text.clone(),
        })
    }

    /// Whether a stored event goes to the connection as stored: its DID,
    /// collection and size pass, and its record meets `where` (filters
    /// without `fields`).
    pub(crate) fn passes(&self, stored: &bytes::Bytes) -> bool {
        repo::stream_event_forms(stored).is_some_and(|(json, _)| {
            self.wants(&json) && !matches!(self.shape(&json), Shaped::Skipped)
        })
    }

    /// Whether the connection wants `event` (a stored event's JSON), as far
    /// as its DID, collection and size tell.
    pub(crate) fn wants(&self, event: &[u8]) -> bool {
        if self.max_message_bytes > 0 && event.len() > self.max_message_bytes {
            return false;
        }
        if !self.dids.is_empty() && !event_did(event).is_some_and(|d| self.dids.contains(d)) {
            return false;
        }
        // Account and identity events pass collection filters, as
        // Jetstream's do.
        if (self.collections.is_empty() && self.prefixes.is_empty())
            || event_kind(event) != Some("commit")
        {
            return true;
        }
        event_collection(event).is_some_and(|c| {
            self.collections.contains(c) || self.prefixes.iter().any(|p| c.starts_with(p.as_str()))
        })
    }

    /// What to send of `event` (one [`Filters::wants`]): `where` and
    /// `fields` read its record.
    pub(crate) fn shape(&self, event: &[u8]) -> Shaped {
        if self.condition.is_none() && self.fields.is_none() {
            return Shaped::AsStored;
        }
        let Ok(mut parsed) = serde_json::from_slice::<serde_json::Value>(event) else {
            return Shaped::Skipped;
        };
        let Some(record) = parsed.pointer_mut("/commit/record") else {
            return Shaped::AsStored;
        };
        if let Some(condition) = &self.condition
            && !condition.matches(record)
        {
            return Shaped::Skipped;
        }
        let Some(fields) = &self.fields else {
            return Shaped::AsStored;
        };
        *record = fields.select(record);
        serde_json::to_vec(&parsed).map_or(Shaped::Skipped, Shaped::Reshaped)
    }
}

/// An NSID prefix: dot-separated segments of letters, digits and hyphens.
fn valid_prefix(prefix: &str) -> bool {
    !prefix.is_empty()
        && prefix.len() <= 317
        && prefix.split('.').all(|s| {
            !s.is_empty()
                && s.len() <= 63
                && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// The string after `marker` up to the next quote (DIDs and NSIDs hold no
/// quote or escape). The markers' searchers are built once: building one
/// per search cost more than the search, per event per connection.
fn string_after<'a>(event: &'a [u8], marker: &memchr::memmem::Finder<'static>) -> Option<&'a str> {
    let start = marker.find(event)? + marker.needle().len();
    let len = memchr::memchr(b'"', &event[start..])?;
    std::str::from_utf8(&event[start..start + len]).ok()
}

static DID_MARKER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"{\"did\":\""));
static KIND_MARKER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b",\"kind\":\""));
static COLLECTION_MARKER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b",\"collection\":\""));

/// An event's DID: its first field.
fn event_did(event: &[u8]) -> Option<&str> {
    event
        .starts_with(b"{\"did\":\"")
        .then(|| string_after(event, &DID_MARKER))
        .flatten()
}

/// An event's kind (`commit`, `account`, `identity`): the first `kind`
/// field, after the DID and the time, which hold no quote.
fn event_kind(event: &[u8]) -> Option<&str> {
    string_after(event, &KIND_MARKER)
}

/// A commit event's collection: the commit's third field (its rev and
/// operation before it hold no quote).
fn event_collection(event: &[u8]) -> Option<&str> {
    string_after(event, &COLLECTION_MARKER)
}

/// A client's `options_update`: the filters it replaces the connection's
/// with.
pub(super) fn options_update(text: &str) -> Result<Filters, String> {
    #[derive(serde::Deserialize)]
    struct Update {
        #[serde(rename = "type")]
        kind: String,
        payload: Wanted,
    }
    if text.len() > 10 << 20 {
        return Err("an options_update is at most 10 MB".into());
    }
    let update: Update =
        serde_json::from_str(text).map_err(|e| format!("not an options_update message: {e}"))?;
    if update.kind != "options_update" {
        return Err(format!(
            "unknown message type {:?} (expected options_update)",
            update.kind
        ));
    }
    Filters::new(&update.payload)
}

/// The connection's parameters, from the query string.
#[derive(Debug, Default)]
pub(crate) struct Params {
    pub(crate) wanted: Wanted,
    pub(crate) cursor: Option<u64>,
    pub(crate) compress: bool,
    pub(crate) require_hello: bool,
}

pub(super) fn params(query: Option<&str>) -> Result<Params, String> {
    let mut p = Params::default();
    let flag = |k: &str, v: &str| match v {
        "true" | "1" => Ok(true),
        "false" | "0" | "" => Ok(false),
        _ => Err(format!("{k}={v:?}: expected true or false")),
    };
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*k {
            "wantedCollections" => p.wanted.wanted_collections.push(v.into_owned()),
            "wantedDids" => p.wanted.wanted_dids.push(v.into_owned()),
            "where" => p.wanted.condition = Some(v.into_owned()),
            "fields" => p
                .wanted
                .fields
                .extend(v.split(',').filter(|f| !f.is_empty()).map(str::to_owned)),
            "cursor" => {
                p.cursor = Some(
                    v.parse()
                        .map_err(|_| format!("cursor {v:?} is not a time in unix microseconds"))?,
                );
            }
            "maxMessageSizeBytes" => {
                p.wanted.max_message_size_bytes = v
                    .parse()
                    .map_err(|_| format!("maxMessageSizeBytes {v:?} is not a number"))?;
            }
            "compress" => p.compress = flag(&k, &v)?,
            "requireHello" => p.require_hello = flag(&k, &v)?,
            _ => {}
        }
    }
    Ok(p)
}

/// What makes two connections' filters the same, for a shared pass.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct PassKey {
    collections: Vec<String>,
    prefixes: Vec<String>,
    dids: Vec<String>,
    max_message_bytes: usize,
    condition: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &[u8] = br#"{"did":"did:plc:abc","time_us":5,"kind":"commit","commit":{"rev":"3m","operation":"create","collection":"app.bsky.feed.post","rkey":"x","record":{"collection":"fake"},"cid":"b"}}"#;

    #[test]
    fn filters_read_the_did_and_collection() {
        assert_eq!(event_did(EVENT), Some("did:plc:abc"));
        assert_eq!(event_collection(EVENT), Some("app.bsky.feed.post"));
        let wanted = |c: &[&str], d: &[&str], max| Wanted {
            wanted_collections: c.iter().map(ToString::to_string).collect(),
            wanted_dids: d.iter().map(ToString::to_string).collect(),
            max_message_size_bytes: max,
            ..Wanted::default()
        };
        let f = |c: &[&str], d: &[&str], max| Filters::new(&wanted(c, d, max)).unwrap();
        assert!(f(&[], &[], 0).wants(EVENT));
        assert!(f(&["app.bsky.feed.post"], &[], 0).wants(EVENT));
        assert!(f(&["app.bsky.feed.*"], &[], 0).wants(EVENT));
        assert!(f(&["app.bsky.*"], &["did:plc:abc"], 0).wants(EVENT));
        assert!(!f(&["app.bsky.feed.like"], &[], 0).wants(EVENT));
        assert!(!f(&["app.bsky.graph.*"], &[], 0).wants(EVENT));
        assert!(!f(&[], &["did:plc:other"], 0).wants(EVENT));
        assert!(!f(&[], &[], 10).wants(EVENT));
        let account = br#"{"did":"did:plc:abc","time_us":6,"kind":"account","account":{"active":true,"did":"did:plc:abc","time":"t"}}"#;
        assert_eq!(event_kind(account), Some("account"));
        assert!(f(&["app.bsky.feed.post"], &[], 0).wants(account));
        assert!(!f(&[], &["did:plc:other"], 0).wants(account));
        assert!(Filters::new(&wanted(&["not an nsid"], &[], 0)).is_err());
        assert!(Filters::new(&wanted(&[], &["alice"], 0)).is_err());
    }
}
