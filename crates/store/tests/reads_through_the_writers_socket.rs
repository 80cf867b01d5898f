//! A local store's writer answers other processes' reads on its socket
//! (`datarepo.sock`): a reader that finds it reads through it, sees what a
//! reader of the database would (every durable write, nothing pending),
//! and reads the database itself when the writer is gone.

use std::{collections::BTreeMap, time::Duration};

use bytes::Bytes;
use keycodec::KeyRange;
use store::{Error, Kv, Location, READ_SOCKET, ReadSocket, SlateKv, SlateOptions, WriteOp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A reader of the store in `dir` (through the writer's socket unless
/// `direct`), looking for new commits once a minute when it reads the
/// database itself.
async fn open_reader(dir: &std::path::Path, direct: bool) -> SlateKv {
    let mut options = SlateOptions::default();
    options.direct_reads = direct;
    SlateKv::open_reader_with(
        &Location::Local(dir.to_path_buf()),
        Duration::from_secs(60),
        &options,
    )
    .await
    .unwrap()
}

fn key(n: u64) -> Vec<u8> {
    // Keys sharing prefixes, so ranges cut through runs of them.
    format!("k{:03}/{}", n % 97, n).into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_through_the_socket_equal_a_model_of_what_was_written() {
    let dir = testkit::tempdir("read-socket-model");
    let writer = SlateKv::open_local(dir.path()).await.unwrap();
    let _socket = ReadSocket::serve(writer.clone(), dir.path()).unwrap();
    let reader = open_reader(dir.path(), false).await;
    assert_eq!(reader.read_socket(), Some(dir.path().join(READ_SOCKET)));
    let direct = open_reader(dir.path(), true).await;

    let mut model = BTreeMap::<Vec<u8>, Bytes>::new();
    let mut rng = testkit::Rng(7);
    for round in 0..20 {
        let mut ops = Vec::new();
        for _ in 0..50 {
            let k = key(rng.below(5_000));
            if rng.below(5) == 0 {
                model.remove(&k);
                ops.push(WriteOp::Delete(k));
            } else {
                // Values up to 70 KB, past any one buffer.
                let longest = if rng.below(20) == 0 { 70_000 } else { 40 };
                let len = usize::try_from(rng.below(longest)).unwrap();
                let v = Bytes::from(vec![u8::try_from(round).unwrap(); len]);
                model.insert(k.clone(), v.clone());
                ops.push(WriteOp::Put(k, v));
            }
        }
        writer.write(ops).await.unwrap();

        for _ in 0..20 {
            let k = key(rng.below(5_000));
            assert_eq!(reader.get(&k).await.unwrap(), model.get(&k).cloned());
            let (a, b) = (key(rng.below(5_000)), key(rng.below(5_000)));
            let range = KeyRange {
                start: a.clone().min(b.clone()),
                end: (rng.below(4) != 0).then(|| a.max(b)),
            };
            let reverse = rng.below(2) == 0;
            let limit = usize::try_from(rng.below(300)).unwrap();
            let expected: Vec<(Bytes, Bytes)> = {
                let within = model
                    .iter()
                    .filter(|(k, _)| range.contains(k))
                    .map(|(k, v)| (Bytes::from(k.clone()), v.clone()));
                if reverse {
                    within.rev().take(limit).collect()
                } else {
                    within.take(limit).collect()
                }
            };
            assert_eq!(reader.scan(&range, reverse, limit).await.unwrap(), expected);
        }
    }
    // Many reads at once share the socket's connections.
    let reads = (0..64).map(|n| {
        let reader = reader.clone();
        async move { reader.get(&key(n)).await.unwrap() }
    });
    let got = futures::future::join_all(reads).await;
    let expected: Vec<_> = (0..64).map(|n| model.get(&key(n)).cloned()).collect();
    assert_eq!(got, expected);

    // `direct_reads` opens the database even with the socket there.
    assert_eq!(direct.read_socket(), None);
    writer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_still_waiting_for_its_flush_is_not_read_through_the_socket() {
    let dir = testkit::tempdir("read-socket-durable");
    let mut options = SlateOptions::default();
    options.flush_interval = Some(Duration::from_secs(3_600));
    let writer = SlateKv::open_with(&Location::Local(dir.path().to_path_buf()), &options)
        .await
        .unwrap();
    let first = writer
        .apply(vec![WriteOp::Put(
            b"durable".to_vec(),
            Bytes::from_static(b"1"),
        )])
        .await
        .unwrap();
    writer.flush().await.unwrap();
    first.wait().await.unwrap();
    let _socket = ReadSocket::serve(writer.clone(), dir.path()).unwrap();
    let reader = open_reader(dir.path(), false).await;
    assert!(reader.read_socket().is_some());

    let pending = writer
        .apply(vec![WriteOp::Put(
            b"pending".to_vec(),
            Bytes::from_static(b"2"),
        )])
        .await
        .unwrap();
    assert_eq!(
        writer.get(b"pending").await.unwrap(),
        Some(Bytes::from_static(b"2"))
    );
    assert_eq!(reader.get(b"pending").await.unwrap(), None);
    assert_eq!(
        reader.get(b"durable").await.unwrap(),
        Some(Bytes::from_static(b"1"))
    );
    writer.flush().await.unwrap();
    pending.wait().await.unwrap();
    assert_eq!(
        reader.get(b"pending").await.unwrap(),
        Some(Bytes::from_static(b"2"))
    );
    // A reader cannot write through the socket.
    assert!(matches!(
        reader
            .write(vec![WriteOp::Delete(b"durable".to_vec())])
            .await,
        Err(Error::ReadOnly)
    ));
    writer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_writer_answering_a_reader_opens_the_database() {
    let dir = testkit::tempdir("read-socket-gone");
    let writer = SlateKv::open_local(dir.path()).await.unwrap();
    writer
        .write(vec![WriteOp::Put(b"k".to_vec(), Bytes::from_static(b"v"))])
        .await
        .unwrap();
    let socket = ReadSocket::serve(writer.clone(), dir.path()).unwrap();
    let through = open_reader(dir.path(), false).await;
    assert!(through.read_socket().is_some());

    // The writer stops answering: the socket file goes, and a reader that
    // was reading through it says what happened.
    drop(socket);
    assert!(!dir.path().join(READ_SOCKET).exists());
    // (Its connections close as their tasks are cancelled, a moment later.)
    let mut answered = through.get(b"k").await;
    for _ in 0..100 {
        if answered.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        answered = through.get(b"k").await;
    }
    let message = answered.unwrap_err().to_string();
    assert!(message.contains(READ_SOCKET), "{message}");
    assert!(message.contains("run the command again"), "{message}");

    // A socket file left by a writer that died (nothing listening on it).
    drop(std::os::unix::net::UnixListener::bind(dir.path().join(READ_SOCKET)).unwrap());
    assert!(dir.path().join(READ_SOCKET).exists());
    let direct = open_reader(dir.path(), false).await;
    assert_eq!(direct.read_socket(), None);
    assert_eq!(
        direct.get(b"k").await.unwrap(),
        Some(Bytes::from_static(b"v"))
    );
    // The next writer's socket replaces the stale file.
    let _socket = ReadSocket::serve(writer.clone(), dir.path()).unwrap();
    assert!(open_reader(dir.path(), false).await.read_socket().is_some());
    writer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_breaking_the_protocol_is_dropped_and_others_are_still_answered() {
    let dir = testkit::tempdir("read-socket-garbage");
    let writer = SlateKv::open_local(dir.path()).await.unwrap();
    writer
        .write(vec![WriteOp::Put(b"k".to_vec(), Bytes::from_static(b"v"))])
        .await
        .unwrap();
    let _socket = ReadSocket::serve(writer.clone(), dir.path()).unwrap();
    let path = dir.path().join(READ_SOCKET);
    let hello = b"datarepo-reads/1";
    let mut rng = testkit::Rng(11);
    for case in 0..40 {
        let mut stream = tokio::net::UnixStream::connect(&path).await.unwrap();
        let mut bytes = Vec::new();
        if case % 2 == 1 {
            bytes.extend_from_slice(hello);
        }
        // A request with an unknown operation, a key longer than allowed,
        // or random bytes.
        match case % 3 {
            0 => bytes.push(0x7f),
            1 => bytes.extend_from_slice(&[0x01, 0xff, 0xff, 0xff, 0xff]),
            _ => {
                // Never a get or a scan, which could be a valid request.
                bytes.push(0x80 | rng.next_u64().to_le_bytes()[0]);
                bytes.extend((0..rng.below(64)).map(|_| rng.next_u64().to_le_bytes()[0]));
            }
        }
        stream.write_all(&bytes).await.unwrap_or(());
        stream.shutdown().await.unwrap_or(());
        // The server answers at most the hello (and a truncated request's
        // answer never comes); then it closes.
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
            .await
            .expect("the server closes a connection breaking the protocol")
            .unwrap_or(0);
        assert!(answer.len() <= hello.len(), "case {case}: {answer:?}");
    }
    let reader = open_reader(dir.path(), false).await;
    assert!(reader.read_socket().is_some());
    assert_eq!(
        reader.get(b"k").await.unwrap(),
        Some(Bytes::from_static(b"v"))
    );
    writer.close().await.unwrap();
}
