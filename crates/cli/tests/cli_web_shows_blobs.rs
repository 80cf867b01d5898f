//! The web interface shows the blobs records refer to, in headless
//! Chromium: a record's image (a PNG Pillow made) as a thumbnail the
//! browser decodes at the image's own size, a small image in the
//! collection's record list, and a file that is not an image as a download
//! link with its type and size. On a server with `--private-reads` the
//! images load with the token the page was given.

use crate::common;
use crate::web;

use std::{path::Path, process::Command, process::Stdio};

use common::{ServerProcess, datarepo, free_port, serve, wait_until_up};
use serde_json::{Value, json};
use web::browser::{browser, q, set_token, start_driver, wait_for};

const DID: &str = "did:web:pictures.test";
const TOKEN: &str = "web-blobs-token";
const POSTS: &str = "app.bsky.feed.post";

/// A 64×48 PNG made by Pillow (the test venv's), so that what the browser
/// decodes is checked against a size nobody here encoded.
fn png() -> Vec<u8> {
    let out = Command::new(testkit::python_sdk())
        .args([
            "-c",
            "import io, sys\nfrom PIL import Image\n\
             b = io.BytesIO()\nImage.new('RGB', (64, 48), (200, 40, 30)).save(b, 'PNG')\n\
             sys.stdout.buffer.write(b.getvalue())",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn cli(store: &Path, args: &[&str], stdin: &str) -> Value {
    let mut all = vec!["--store", store.to_str().unwrap(), "--repo", DID, "--json"];
    all.extend_from_slice(args);
    let out = datarepo(&all, stdin);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::json_lines(&out).pop().unwrap_or(Value::Null)
}

fn start(store: &Path, private: bool) -> (ServerProcess, u16) {
    let port = free_port();
    let mut command = serve(store.to_str().unwrap(), port, TOKEN);
    if private {
        command.arg("--private-reads");
    }
    let server = ServerProcess(
        command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(wait_until_up(port), "the server did not start within 30 s");
    (server, port)
}

/// The decoded width of the first image matching `css` once it has
/// loaded.
async fn decoded_width(c: &fantoccini::Client, what: &str, css: &str) -> Value {
    wait_for(
        c,
        what,
        &format!(
            "(() => {{ const i = document.querySelector({css:?}); \
             return i && i.complete && i.naturalWidth; }})()"
        ),
    )
    .await
}

#[test]
fn records_show_their_images_and_files() {
    let tmp = testkit::tempdir("web-blobs");
    let dir = tmp.path();
    let store = dir.join("data");
    let picture = dir.join("picture.png");
    std::fs::write(&picture, png()).unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "plain words, no picture\n".repeat(100)).unwrap();
    cli(&store, &["init"], "");
    let image = cli(&store, &["blob", "put", picture.to_str().unwrap()], "")["blob"].clone();
    assert_eq!(image["mimeType"], "image/png");
    let file = cli(
        &store,
        &[
            "blob",
            "put",
            notes.to_str().unwrap(),
            "--mime",
            "text/plain",
        ],
        "",
    )["blob"]
        .clone();
    let post = json!({"text": "a red square", "createdAt": "2026-11-27T00:00:00Z",
        "embed": {"$type": "app.bsky.embed.images",
                  "images": [{"alt": "a red square", "image": image}]},
        "attachment": file});
    cli(&store, &["put", POSTS, "3kaaaaaaaaa22"], &post.to_string());
    let image_cid = image["ref"]["$link"].as_str().unwrap().to_owned();
    let file_cid = file["ref"]["$link"].as_str().unwrap().to_owned();

    let driver = start_driver();
    for private in [false, true] {
        let (_server, port) = start(&store, private);
        let base = format!("http://127.0.0.1:{port}");
        common::rt().block_on(async {
            let c = browser(&driver, false, 1280, 900).await;
            c.goto(&format!("{base}/repo/{}/{POSTS}", q(DID)))
                .await
                .unwrap();
            if private {
                set_token(&c, TOKEN).await;
            }
            let width = decoded_width(&c, "the record list's image", "td.preview img.mini").await;
            assert_eq!(width, 64, "private reads: {private}");

            c.goto(&format!("{base}/repo/{}/{POSTS}/3kaaaaaaaaa22", q(DID)))
                .await
                .unwrap();
            let width = decoded_width(&c, "the record's image", "figure.blob img.thumb").await;
            assert_eq!(width, 64, "private reads: {private}");
            let shown = c
                .execute(
                    "const i = document.querySelector('figure.blob img.thumb'); \
                     const d = document.querySelector('p.blob a[download]'); \
                     return {cid: i.dataset.cid, alt: i.alt, \
                             caption: document.querySelector('figure.blob figcaption').textContent, \
                             file: d.dataset.cid, href: d.getAttribute('href'), \
                             facts: d.parentElement.textContent};",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(shown["cid"], image_cid.as_str(), "{shown}");
            assert_eq!(shown["alt"], "a red square", "{shown}");
            assert!(
                shown["caption"].as_str().unwrap().contains("image/png"),
                "{shown}"
            );
            assert_eq!(shown["file"], file_cid.as_str(), "{shown}");
            assert!(
                shown["href"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("cid={file_cid}")),
                "{shown}"
            );
            let facts = shown["facts"].as_str().unwrap();
            assert!(
                facts.contains("text/plain") && facts.contains("KiB"),
                "{shown}"
            );
            c.close().await.unwrap();
        });
    }
}
