//! Passwords: Argon2id with OWASP's parameters, stored as PHC strings.
//!
//! Hashing costs tens of milliseconds by design; callers run it on a
//! bounded blocking pool so that logins cannot starve writes.

use argon2::{
    Algorithm, Argon2, Params, Version,
    password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString},
};

use crate::error::Error;

/// OWASP's Argon2id parameters: 19 MiB of memory, 2 passes, 1 lane.
pub const MEMORY_KIB: u32 = 19 * 1024;
/// Argon2id passes.
pub const PASSES: u32 = 2;
/// The longest password accepted, in bytes.
pub const MAX_PASSWORD_BYTES: usize = 1024;

fn argon2() -> Argon2<'static> {
    // The parameters are constants within Argon2's limits.
    let params = Params::new(MEMORY_KIB, PASSES, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// A password's salt: 16 bytes from `random`, which fills 32 (the shape
/// of the randomness the binary injects for keys too).
#[must_use]
pub fn salt(random: impl FnOnce(&mut [u8; 32])) -> [u8; 16] {
    let mut bytes = [0u8; 32];
    random(&mut bytes);
    let mut salt = [0u8; 16];
    salt.copy_from_slice(&bytes[..16]);
    salt
}

/// The PHC string of `password` hashed with `salt` (16 random bytes).
///
/// # Errors
///
/// [`Error::InvalidPassword`] for an empty or over-long password.
pub fn hash(password: &str, salt: [u8; 16]) -> Result<String, Error> {
    if password.is_empty() {
        return Err(Error::InvalidPassword("a password cannot be empty"));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(Error::InvalidPassword("a password is at most 1024 bytes"));
    }
    let salt = SaltString::encode_b64(&salt)
        .map_err(|_| Error::InvalidPassword("the salt could not be encoded"))?;
    argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|_| Error::InvalidPassword("the password could not be hashed"))
}

/// Whether `password` is the one `phc` was made from. A malformed stored
/// hash matches nothing.
#[must_use]
pub fn verify(password: &str, phc: &str) -> bool {
    if password.len() > MAX_PASSWORD_BYTES {
        return false;
    }
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    argon2()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok()
}

/// Hashes `password` against a fixed hash that nothing matches: what a
/// login for an unknown account costs, so that it takes as long as one for
/// a known account with a wrong password.
pub fn verify_against_nothing(password: &str) {
    const NOTHING: &str = "$argon2id$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let _ = verify(password, NOTHING);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only() {
        let phc = hash("correct horse", [7; 16]).unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert!(verify("correct horse", &phc));
        assert!(!verify("correct horsE", &phc));
        assert!(!verify("correct horse", "not a phc string"));
        assert!(hash("", [7; 16]).is_err());
    }
}
