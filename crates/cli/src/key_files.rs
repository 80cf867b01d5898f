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

/// The secret in `file`, or a new one (32 random bytes, hex) written there
/// with mode 0600 when the file does not exist.
pub(crate) fn read_or_create_secret(file: &Path) -> std::io::Result<Vec<u8>> {
    match std::fs::read(file) {
        Ok(bytes) => {
            let secret: Vec<u8> = bytes.trim_ascii().to_vec();
            if secret.len() < 32 {
                return Err(std::io::Error::other(
                    "the secret is shorter than 32 bytes; give a longer one or remove the file",
                ));
            }
            return Ok(secret);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut random = [0u8; 32];
    os_random(&mut random);
    let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(file)?;
    std::io::Write::write_all(&mut f, hex.as_bytes())?;
    f.sync_all()?;
    Ok(hex.into_bytes())
}

/// The signing-key directory `dir` (created, mode 0700, when absent),
/// making keys on `curve`.
pub(crate) fn signing_key_dir(
    dir: std::path::PathBuf,
    curve: repo::Curve,
) -> std::result::Result<server::SigningKeyDir, String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(&dir)
        .map_err(|e| format!("{}: cannot create it: {e}", dir.display()))?;
    Ok(server::SigningKeyDir {
        dir,
        curve,
        random: std::sync::Arc::new(os_random),
    })
}
