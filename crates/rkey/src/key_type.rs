//! [`KeyType`]: the record key rule a collection declares.

use std::{fmt, str::FromStr};

use crate::{error::Error, nsid::validate_nsid, record_key::RecordKey, tid::Tid};

/// The record key type of a collection, as written in a Lexicon schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// `tid`: the key is a TID.
    Tid,
    /// `literal:<value>`: the key is exactly `value` (commonly `self`).
    Literal(RecordKey),
    /// `any`: any valid record key.
    Any,
    /// `nsid`: the key is a valid NSID.
    Nsid,
}

impl KeyType {
    /// Checks whether `key` fits this type.
    ///
    /// # Errors
    ///
    /// [`Error::KeyTypeMismatch`] naming the key, the type and the reason.
    ///
    /// # Examples
    ///
    /// ```
    /// use rkey::{KeyType, RecordKey};
    ///
    /// let self_only: KeyType = "literal:self".parse().unwrap();
    /// assert!(self_only.check(&RecordKey::new("self").unwrap()).is_ok());
    /// assert!(self_only.check(&RecordKey::new("other").unwrap()).is_err());
    /// ```
    pub fn check(&self, key: &RecordKey) -> Result<(), Error> {
        let reason = match self {
            Self::Any => return Ok(()),
            Self::Tid => match Tid::parse(key.as_str()) {
                Ok(_) => return Ok(()),
                Err(e) => format!("not a TID: {e}"),
            },
            Self::Literal(value) if value == key => return Ok(()),
            Self::Literal(value) => format!("the only key allowed is {:?}", value.as_str()),
            Self::Nsid => match validate_nsid(key.as_str()) {
                Ok(()) => return Ok(()),
                Err(e) => format!("not an NSID: {e}"),
            },
        };
        Err(Error::KeyTypeMismatch {
            key: key.as_str().to_owned(),
            key_type: self.to_string(),
            reason,
        })
    }
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tid => f.write_str("tid"),
            Self::Literal(value) => write!(f, "literal:{value}"),
            Self::Any => f.write_str("any"),
            Self::Nsid => f.write_str("nsid"),
        }
    }
}

impl FromStr for KeyType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "tid" => Ok(Self::Tid),
            "any" => Ok(Self::Any),
            "nsid" => Ok(Self::Nsid),
            _ => match s.strip_prefix("literal:") {
                Some(value) => {
                    RecordKey::new(value)
                        .map(Self::Literal)
                        .map_err(|e| Error::KeyType {
                            input: s.to_owned(),
                            reason: format!("the literal value is not a valid record key: {e}"),
                        })
                }
                None => Err(Error::KeyType {
                    input: s.to_owned(),
                    reason: "expected `tid`, `literal:<value>`, `any` or `nsid`".to_owned(),
                }),
            },
        }
    }
}

impl serde::Serialize for KeyType {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for KeyType {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
