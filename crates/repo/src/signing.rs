//! Signing keys and commit signatures, as AT Protocol signs its commits.
//!
//! - Curves: P-256 (`p256`) and secp256k1 (`k256`).
//! - Signatures: ECDSA over SHA-256 of the signed bytes, RFC 6979
//!   deterministic, low-S normalized, 64-byte compact `r ‖ s`. A high-S
//!   signature is rejected, as AT Protocol's verifiers reject it.
//! - Public keys: `did:key:z…`, base58btc multibase of the multicodec
//!   varint (`p256-pub` 0x1200, `secp256k1-pub` 0xe7) followed by the
//!   33-byte compressed point.
//! - Private key files: PKCS #8 PEM (`-----BEGIN PRIVATE KEY-----`), the
//!   curve named by the key's algorithm identifier; `openssl pkey` reads
//!   them.
//!
//! Nothing here reads a clock or a random source: key generation takes its
//! 32 random bytes from the caller.

use std::{fmt, io::Write as _, path::Path};

use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// The multicodec code of a P-256 public key.
const P256_PUB: u64 = 0x1200;
/// The multicodec code of a secp256k1 public key.
const SECP256K1_PUB: u64 = 0xe7;
/// The `did:key` method prefix.
const DID_KEY_PREFIX: &str = "did:key:";

/// A signing key's curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Curve {
    /// NIST P-256 (secp256r1).
    P256,
    /// secp256k1.
    K256,
}

impl Curve {
    /// `p256` or `k256`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::P256 => "p256",
            Self::K256 => "k256",
        }
    }
}

impl fmt::Display for Curve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a key could not be read, parsed or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The bytes are not a private key this module reads.
    #[error("{what}: not a P-256 or secp256k1 private key in PKCS #8 PEM")]
    NotAPrivateKey {
        /// What was read (a path, or "the key").
        what: String,
    },
    /// The text is not a `did:key` of a supported curve.
    #[error("{did}: not a P-256 or secp256k1 did:key ({reason})")]
    NotADidKey {
        /// The text.
        did: String,
        /// Why.
        reason: String,
    },
}

/// Why a signature does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The commit carries no signature.
    #[error("the commit is not signed")]
    Unsigned,
    /// Not 64 bytes, or `r`/`s` out of range.
    #[error("the signature is not a 64-byte compact ECDSA signature")]
    Malformed,
    /// `s` is in the upper half of the curve order.
    #[error("the signature is not low-S normalized (a malleable high-S signature)")]
    HighS,
    /// The signature does not match the key and bytes.
    #[error("the signature does not match the key")]
    Mismatch,
}

enum Secret {
    P256(p256::ecdsa::SigningKey),
    K256(k256::ecdsa::SigningKey),
}

/// A private signing key. Its `Debug` shows only the public key; the
/// secret is zeroized when dropped (by the curve crates).
pub struct SigningKey {
    secret: Secret,
    public: PublicKey,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public.did_key())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new key on `curve` from `random`, called for 32 bytes until they
    /// make a valid scalar (all but about 2^-32 of draws do on the first
    /// try).
    pub fn generate(curve: Curve, mut random: impl FnMut(&mut [u8; 32])) -> Self {
        loop {
            let mut bytes = Zeroizing::new([0u8; 32]);
            random(&mut bytes);
            if let Some(key) = Self::from_scalar_bytes(curve, &bytes) {
                return key;
            }
        }
    }

    /// The key whose secret scalar is `bytes` (big-endian), if it is one
    /// (non-zero and below the curve order).
    #[must_use]
    pub fn from_scalar_bytes(curve: Curve, bytes: &[u8; 32]) -> Option<Self> {
        let secret = match curve {
            Curve::P256 => Secret::P256(p256::ecdsa::SigningKey::from_slice(bytes).ok()?),
            Curve::K256 => Secret::K256(k256::ecdsa::SigningKey::from_slice(bytes).ok()?),
        };
        Some(Self::new(secret))
    }

    fn new(secret: Secret) -> Self {
        let public = match &secret {
            Secret::P256(k) => PublicKey {
                key: Public::P256(*k.verifying_key()),
            },
            Secret::K256(k) => PublicKey {
                key: Public::K256(*k.verifying_key()),
            },
        };
        Self { secret, public }
    }

    /// Parses a PKCS #8 PEM private key of either curve.
    ///
    /// # Errors
    ///
    /// [`KeyError::NotAPrivateKey`].
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, KeyError> {
        if let Ok(k) = p256::ecdsa::SigningKey::from_pkcs8_pem(pem) {
            return Ok(Self::new(Secret::P256(k)));
        }
        if let Ok(k) = k256::ecdsa::SigningKey::from_pkcs8_pem(pem) {
            return Ok(Self::new(Secret::K256(k)));
        }
        Err(KeyError::NotAPrivateKey {
            what: "the key".into(),
        })
    }

    /// The key as PKCS #8 PEM.
    #[must_use]
    pub fn to_pkcs8_pem(&self) -> Zeroizing<String> {
        // Encoding a valid scalar into a fixed structure cannot fail.
        let pem = match &self.secret {
            Secret::P256(k) => k.to_pkcs8_pem(LineEnding::LF),
            Secret::K256(k) => k.to_pkcs8_pem(LineEnding::LF),
        };
        pem.unwrap_or_default()
    }

    /// Reads a key file ([`SigningKey::write_new_file`]'s format).
    ///
    /// # Errors
    ///
    /// [`KeyError::Io`] or [`KeyError::NotAPrivateKey`] naming the file.
    pub fn read_file(path: &Path) -> Result<Self, KeyError> {
        let text =
            Zeroizing::new(
                std::fs::read_to_string(path).map_err(|source| KeyError::Io {
                    path: path.display().to_string(),
                    source,
                })?,
            );
        Self::from_pkcs8_pem(&text).map_err(|_| KeyError::NotAPrivateKey {
            what: path.display().to_string(),
        })
    }

    /// Writes the key to a new file readable and writable by its owner only
    /// (mode 0600 on Unix). An existing file is never overwritten.
    ///
    /// # Errors
    ///
    /// [`KeyError::Io`] (`AlreadyExists` when the file exists).
    pub fn write_new_file(&self, path: &Path) -> Result<(), KeyError> {
        let io = |source| KeyError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let mut file = options.open(path).map_err(io)?;
        let written = file
            .write_all(self.to_pkcs8_pem().as_bytes())
            .and_then(|()| file.sync_all());
        if let Err(e) = written {
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(io(e));
        }
        Ok(())
    }

    /// The curve.
    #[must_use]
    pub fn curve(&self) -> Curve {
        self.public.curve()
    }

    /// The public key.
    #[must_use]
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// Signs `message`: ECDSA over its SHA-256, low-S, compact `r ‖ s`.
    #[must_use]
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        let digest = Sha256::digest(message);
        let bytes = match &self.secret {
            Secret::P256(k) => {
                let sig: p256::ecdsa::Signature = sign_prehash(k, &digest);
                sig.normalize_s().to_bytes()
            }
            Secret::K256(k) => {
                let sig: k256::ecdsa::Signature = sign_prehash(k, &digest);
                sig.normalize_s().to_bytes()
            }
        };
        let mut out = [0u8; 64];
        out.copy_from_slice(&bytes);
        out
    }
}

fn sign_prehash<S, K: p256::ecdsa::signature::hazmat::PrehashSigner<S>>(
    key: &K,
    digest: &[u8],
) -> S {
    // A 32-byte digest is always accepted; RFC 6979 retries internally
    // until its nonce is valid.
    key.sign_prehash(digest)
        .unwrap_or_else(|_| unreachable!("a SHA-256 digest is a valid prehash"))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Public {
    P256(p256::ecdsa::VerifyingKey),
    K256(k256::ecdsa::VerifyingKey),
}

/// A public key: verifies signatures, prints and parses as `did:key`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PublicKey {
    key: Public,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.did_key())
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.did_key())
    }
}

impl std::str::FromStr for PublicKey {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, KeyError> {
        Self::from_did_key(s)
    }
}

impl PublicKey {
    /// Parses a `did:key`.
    ///
    /// # Errors
    ///
    /// [`KeyError::NotADidKey`] saying why.
    pub fn from_did_key(did: &str) -> Result<Self, KeyError> {
        let bad = |reason: &str| KeyError::NotADidKey {
            did: did.to_owned(),
            reason: reason.to_owned(),
        };
        let encoded = did
            .strip_prefix(DID_KEY_PREFIX)
            .ok_or_else(|| bad("it does not start with did:key:"))?;
        if !encoded.starts_with('z') {
            return Err(bad("not base58btc multibase (z…)"));
        }
        let (_, bytes) = multibase::decode(encoded).map_err(|_| bad("not valid base58btc"))?;
        let (code, point) =
            unsigned_varint::decode::u64(&bytes).map_err(|_| bad("no multicodec prefix"))?;
        if point.len() != 33 {
            return Err(bad("not a 33-byte compressed point"));
        }
        let key = match code {
            P256_PUB => Public::P256(
                p256::ecdsa::VerifyingKey::from_sec1_bytes(point)
                    .map_err(|_| bad("not a point on P-256"))?,
            ),
            SECP256K1_PUB => Public::K256(
                k256::ecdsa::VerifyingKey::from_sec1_bytes(point)
                    .map_err(|_| bad("not a point on secp256k1"))?,
            ),
            _ => {
                return Err(bad(&format!(
                    "multicodec 0x{code:x} is not a supported key"
                )));
            }
        };
        Ok(Self { key })
    }

    /// The key as `did:key:z…`.
    #[must_use]
    pub fn did_key(&self) -> String {
        let (code, point) = match &self.key {
            Public::P256(k) => (P256_PUB, k.to_sec1_point(true).as_bytes().to_vec()),
            Public::K256(k) => (SECP256K1_PUB, k.to_sec1_point(true).as_bytes().to_vec()),
        };
        let mut buf = unsigned_varint::encode::u64_buffer();
        let mut bytes = unsigned_varint::encode::u64(code, &mut buf).to_vec();
        bytes.extend_from_slice(&point);
        format!(
            "{DID_KEY_PREFIX}{}",
            multibase::encode(multibase::Base::Base58Btc, bytes)
        )
    }

    /// The curve.
    #[must_use]
    pub fn curve(&self) -> Curve {
        match self.key {
            Public::P256(_) => Curve::P256,
            Public::K256(_) => Curve::K256,
        }
    }

    /// Checks a signature [`SigningKey::sign`] made over `message`.
    ///
    /// # Errors
    ///
    /// [`SignatureError`] saying why it does not verify.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), SignatureError> {
        use p256::ecdsa::signature::hazmat::PrehashVerifier as _;
        let digest = Sha256::digest(message);
        match &self.key {
            Public::P256(k) => {
                let sig = p256::ecdsa::Signature::from_slice(signature)
                    .map_err(|_| SignatureError::Malformed)?;
                if sig.normalize_s() != sig {
                    return Err(SignatureError::HighS);
                }
                k.verify_prehash(&digest, &sig)
                    .map_err(|_| SignatureError::Mismatch)
            }
            Public::K256(k) => {
                let sig = k256::ecdsa::Signature::from_slice(signature)
                    .map_err(|_| SignatureError::Malformed)?;
                if sig.normalize_s() != sig {
                    return Err(SignatureError::HighS);
                }
                k.verify_prehash(&digest, &sig)
                    .map_err(|_| SignatureError::Mismatch)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn did_keys_round_trip_and_name_their_curve() {
        for curve in [Curve::P256, Curve::K256] {
            let key = SigningKey::generate(curve, |b| b.fill(7));
            let did = key.public_key().did_key();
            let prefix = match curve {
                // The multicodec varints 80 24 and e7 01 make these
                // leading characters in base58btc.
                Curve::P256 => "did:key:zDn",
                Curve::K256 => "did:key:zQ3s",
            };
            assert!(did.starts_with(prefix), "{did}");
            assert_eq!(PublicKey::from_did_key(&did).unwrap(), *key.public_key());
        }
    }

    #[test]
    fn pem_round_trips() {
        for curve in [Curve::P256, Curve::K256] {
            let key = SigningKey::generate(curve, |b| b.fill(9));
            let back = SigningKey::from_pkcs8_pem(&key.to_pkcs8_pem()).unwrap();
            assert_eq!(back.public_key(), key.public_key());
            assert_eq!(back.curve(), curve);
        }
    }

    #[test]
    fn generate_skips_invalid_scalars() {
        let mut draws = [[0u8; 32], [0xff; 32], [1; 32]].into_iter();
        let key = SigningKey::generate(Curve::K256, |b| *b = draws.next().unwrap());
        assert_eq!(
            key.public_key(),
            SigningKey::from_scalar_bytes(Curve::K256, &[1; 32])
                .unwrap()
                .public_key()
        );
    }
}
