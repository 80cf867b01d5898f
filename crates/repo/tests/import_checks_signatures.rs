//! Import verifies signatures when the store knows the repository's keys
//! (or is given some): a file signed by another key is refused, nothing
//! written, unless that key is given or `trust_new_key`; a restored signed
//! history takes no unsigned commit until a key file is set.

use crate::common;

use std::sync::Arc;

use repo::{Curve, Error, ImportOptions, Repos, SigningKey};
use store::MemoryKv;

async fn import(
    repos: &Repos<MemoryKv>,
    car: &[u8],
    options: ImportOptions,
) -> Result<repo::ImportReport, Error> {
    repos.import_car_with_progress(car, &options, |_| {}).await
}

#[test]
fn imports_verify_against_known_and_given_keys() {
    common::rt().block_on(async {
        let dir = testkit::tempdir("import-signed");
        let (a_file, b_file) = (dir.path().join("a.key"), dir.path().join("b.key"));
        let a = Arc::new(SigningKey::generate(Curve::P256, |b| b.fill(0x0a)));
        let b = Arc::new(SigningKey::generate(Curve::K256, |b| b.fill(0x0b)));
        a.write_new_file(&a_file).unwrap();
        b.write_new_file(&b_file).unwrap();

        let source = common::repos();
        let repo = source
            .create_signed("did:web:a", Arc::clone(&a), a_file)
            .await
            .unwrap();
        repo.apply_writes(common::posts("app.x.post", 2), None)
            .await
            .unwrap();
        let (full, _) = repo.export_car(Vec::new(), None, |_| {}).await.unwrap();
        let since = repo.head().await.unwrap().rev;
        // The source rotates to b, and writes on.
        repo.set_signing_key(Arc::clone(&b), b_file).await.unwrap();
        repo.apply_writes(common::posts("app.x.more", 1), None)
            .await
            .unwrap();
        let (increment, _) = repo
            .export_car(Vec::new(), Some(since), |_| {})
            .await
            .unwrap();

        // A fresh store told key a: verified, and a is known from then on.
        let copy = common::repos();
        let report = import(
            &copy,
            &full,
            ImportOptions {
                keys: vec![*a.public_key()],
                ..ImportOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(report.verified, 1);
        let restored = copy.open("did:web:a").await.unwrap();
        assert_eq!(
            restored.signing_keys().await.unwrap().known,
            vec![*a.public_key()]
        );

        // The increment is signed by b, which this store does not know.
        let head = copy.store().head("did:web:a").await.unwrap();
        let err = import(&copy, &increment, ImportOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Untrusted { .. }), "{err}");
        assert_eq!(copy.store().head("did:web:a").await.unwrap(), head);

        // Given b, it imports, and b is known too.
        let report = import(
            &copy,
            &increment,
            ImportOptions {
                keys: vec![*b.public_key()],
                ..ImportOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(report.verified, 1);
        let restored = copy.open("did:web:a").await.unwrap();
        assert_eq!(
            restored.signing_keys().await.unwrap().known,
            vec![*a.public_key(), *b.public_key()]
        );

        // The restored history is signed, and this store has no key file:
        // writes are refused, nothing written.
        let err = restored
            .apply_writes(common::posts("app.x.new", 1), None)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::SigningKey { .. }), "{err}");

        // Another store that knows only a takes the increment with
        // trust_new_key, without verifying it.
        let other = common::repos();
        import(
            &other,
            &full,
            ImportOptions {
                keys: vec![*a.public_key()],
                ..ImportOptions::default()
            },
        )
        .await
        .unwrap();
        let report = import(
            &other,
            &increment,
            ImportOptions {
                trust_new_key: true,
                ..ImportOptions::default()
            },
        )
        .await
        .unwrap();
        assert_eq!((report.verified, report.commits), (0, 1));
    });
}
