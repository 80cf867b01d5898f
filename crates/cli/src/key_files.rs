//! Keys given on the command line: key files, `did:key`s, and the
//! operating system's randomness for new keys.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use repo::{PublicKey, SigningKey};

use crate::output::Result;

/// The random bytes of a new key: the operating system's generator. The
/// binary is where randomness is chosen and injected into the libraries.
#[allow(clippy::disallowed_methods)]
pub(crate) fn os_random(bytes: &mut [u8; 32]) {
    // getrandom fails only where the OS has no generator at all; a key
    // from anything else would be worse than no key.
    if let Err(e) = getrandom::fill(bytes) {
        panic!("the operating system's random number generator failed: {e}");
    }
}

/// Reads a key file, for a repository to store its path: absolute, so
/// that a server started elsewhere finds it.
pub(crate) fn load_key_file(path: &Path) -> Result<(Arc<SigningKey>, PathBuf)> {
    let key = SigningKey::read_file(path).map_err(|e| e.to_string())?;
    let absolute = std::path::absolute(path)
        .map_err(|e| format!("{}: cannot make the path absolute: {e}", path.display()))?;
    Ok((Arc::new(key), absolute))
}

/// Public keys given as `did:key`s (`--key`).
pub(crate) fn parse_keys(given: &[String]) -> Result<Vec<PublicKey>> {
    given
        .iter()
        .map(|k| PublicKey::from_did_key(k).map_err(|e| format!("--key: {e}").into()))
        .collect()
}
