//! Any bytes as a CAR file: `Repos::import_car` returns a report or an
//! error, never panics; a failed import leaves the store without any
//! repository; an accepted one reads back.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let repos = repo::Repos::new(
            Arc::new(store::Store::new(store::MemoryKv::new())),
            repo::Env::new(|| 1_767_225_600_000_000, 0),
        );
        match repos.import_car(data, None).await {
            Ok(report) => {
                let repo = repos.open(&report.repo).await.unwrap();
                assert_eq!(repo.head().await.unwrap().commit, report.commit);
            }
            Err(_) => assert!(repos.list().await.unwrap().is_empty()),
        }
    });
});
