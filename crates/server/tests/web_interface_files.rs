//! The web interface's files are served from the binary: the page at `/`
//! and at every view's path, each script it loads (and each module those
//! import), revalidation by ETag, and nothing fetched from elsewhere.

use crate::common;

use common::TestServer;

async fn fetch(
    s: &TestServer,
    path: &str,
    etag: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut req = s.client.get(format!("{}{path}", s.url));
    if let Some(tag) = etag {
        req = req.header("if-none-match", tag);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

/// The module paths `text` imports (`from './x.js'`) or the page loads
/// (`src="/ui/x"`, `href="/ui/x"`), as `/ui/…` paths.
fn references(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (open, close) in [
        ("from './", "'"),
        ("src=\"/ui/", "\""),
        ("href=\"/ui/", "\""),
    ] {
        let mut rest = text;
        while let Some(i) = rest.find(open) {
            rest = &rest[i + open.len()..];
            let end = rest.find(close).unwrap();
            out.push(format!("/ui/{}", &rest[..end]));
        }
    }
    out
}

#[tokio::test]
async fn the_page_and_everything_it_loads_are_served() {
    let s = TestServer::memory().await;
    let (status, headers, page) = fetch(&s, "/", None).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'self'")
    );
    // Every view's path answers with the same page (the script draws it).
    for path in [
        "/repo/did:web:a.example",
        "/repo/did:web:a.example/app.bsky.feed.post?where=langs%20%3D%20%22en%22",
        "/repo/did:web:a.example/app.bsky.feed.post/3jui7kd54zh2y",
        "/repo/x/pail?key=a/b",
    ] {
        let (status, _, body) = fetch(&s, path, None).await;
        assert_eq!((status, body.as_str()), (200, page.as_str()), "{path}");
    }

    // Everything reachable from the page, transitively.
    let mut todo = references(&page);
    let mut seen = std::collections::BTreeSet::new();
    while let Some(path) = todo.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let (status, headers, body) = fetch(&s, &path, None).await;
        assert_eq!(status, 200, "{path}");
        let kind = headers["content-type"].to_str().unwrap();
        let want = match path.rsplit('.').next().unwrap() {
            "js" => "text/javascript; charset=utf-8",
            "css" => "text/css; charset=utf-8",
            "svg" => "image/svg+xml",
            other => panic!("unexpected file type {other}"),
        };
        assert_eq!(kind, want, "{path}");
        assert!(
            !body.contains("https://") && !body.contains("//cdn"),
            "{path} loads nothing from elsewhere"
        );
        // Revalidation: the same ETag answers 304 without a body.
        let tag = headers["etag"].to_str().unwrap().to_owned();
        let (status, _, body) = fetch(&s, &path, Some(&tag)).await;
        assert_eq!((status, body.as_str()), (304, ""), "{path}");
        todo.extend(references(&body_of(&s, &path).await));
    }
    for module in [
        "app.js",
        "api.js",
        "dom.js",
        "json.js",
        "views.js",
        "pail.js",
        "edit.js",
        "style.css",
        "favicon.svg",
    ] {
        assert!(
            seen.contains(&format!("/ui/{module}")),
            "{module} is loaded by the page: {seen:?}"
        );
    }

    let (status, _, body) = fetch(&s, "/ui/missing.js", None).await;
    assert_eq!(status, 404);
    assert!(body.contains("NotFound"));
    // Outside the interface's paths, the API's JSON answers as before.
    let (status, _, body) = fetch(&s, "/nothing-here", None).await;
    assert_eq!(status, 404);
    assert!(body.contains("XRPC methods are under /xrpc/"), "{body}");
}

async fn body_of(s: &TestServer, path: &str) -> String {
    fetch(s, path, None).await.2
}
