//! The web interface of `datarepo serve`, driven in headless Chromium
//! (Debian's `chromium` and `chromium-driver`, which the README's test
//! command installs): every view is opened by clicking as a person would,
//! and what the page shows is compared with what the API answers.
//!
//! With `DATAREPO_SCREENSHOTS=DIR` set, the main views are also saved to DIR
//! as PNG files (`scripts/screenshots` does that for `docs/`).

use crate::common;
use crate::web;

use common::{http, start_server};
use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use web::{
    browser::{
        Driver, browser, click, follow_link, path, q, screenshot, set_token, start_driver, texts,
        wait_for,
    },
    data::{
        NOTES, PAGE, POST_COUNT, POSTS, REPO, TOKEN, api, api_post, load, note_lexicon, post, rkey,
    },
};

fn rkeys_of(records: &Value) -> Vec<String> {
    records["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["uri"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The collection page's record keys, once its table has been drawn.
async fn shown_rkeys(c: &Client) -> Vec<String> {
    wait_for(
        c,
        "the records",
        "document.querySelector('.view[data-ready=records]')",
    )
    .await;
    texts(c, "table.record-list tbody tr td:first-child").await
}

#[test]
fn every_view_shows_what_the_api_answers() {
    let dir = testkit::tempdir("web-interface");
    let store = dir.path().join("data");
    let store = store.to_str().unwrap();
    // The notes' Lexicon, added before the server holds the store.
    let lexicon = dir.path().join("note.json");
    std::fs::write(&lexicon, note_lexicon().to_string()).unwrap();
    for args in [
        vec!["init"],
        vec!["lexicon", "add", lexicon.to_str().unwrap()],
    ] {
        let out = common::datarepo(
            &[&["--store", store, "--repo", REPO][..], &args].concat(),
            "",
        );
        assert!(out.status.success(), "{out:?}");
    }
    let (server, port) = start_server(store, TOKEN);
    load(port);
    let driver = start_driver();
    common::rt().block_on(async {
        let c = browser(&driver, false, 1280, 900).await;
        let base = format!("http://127.0.0.1:{port}");
        repositories_and_repository(&c, &base, port).await;
        collection_paging_and_history(&c, &base, port).await;
        queries_and_facets(&c, &base, port).await;
        columns_sorting_charts_and_downloads(&c, &base, port).await;
        record_and_history(&c, &base, port).await;
        commits(&c, &base, port).await;
        pail_tree(&c, &base, port).await;
        writes(&c, &base, port).await;
        c.close().await.unwrap();
        page_weight_and_time(&driver, &base).await;
        if std::env::var_os("DATAREPO_SCREENSHOTS").is_some() {
            more_screenshots(&driver, &base).await;
        }
    });
    drop(server);
}

async fn repositories_and_repository(c: &Client, base: &str, port: u16) {
    let stats = api(
        port,
        &format!("/xrpc/dev.datarepo.getRepoStats?repo={}", q(REPO)),
    );
    c.goto(&format!("{base}/")).await.unwrap();
    wait_for(
        c,
        "the repository row",
        &format!(
            "document.querySelector('tr[data-repo=\"{REPO}\"] td:nth-child(4)').textContent !== '…'"
        ),
    )
    .await;
    let row = texts(c, &format!("tr[data-repo=\"{REPO}\"] td")).await;
    let head = api(
        port,
        &format!("/xrpc/com.atproto.sync.getLatestCommit?did={}", q(REPO)),
    );
    assert_eq!(row[0], REPO);
    assert_eq!(row[1], head["rev"].as_str().unwrap());
    assert_eq!(row[3].replace(',', ""), stats["records"].to_string());
    assert_eq!(row[4].replace(',', ""), stats["commits"].to_string());
    assert_eq!(stats["records"], json!(POST_COUNT - 1 + 5));
    screenshot(c, "repositories").await;

    click(c, &format!("tr[data-repo=\"{REPO}\"] a")).await;
    wait_for(c, "the collection counts", &format!("document.querySelector('tr[data-collection=\"{POSTS}\"] td:nth-child(3)').textContent !== '…'")).await;
    assert_eq!(path(c).await, format!("/repo/{}", q(REPO)));
    let posts = texts(c, &format!("tr[data-collection=\"{POSTS}\"] td")).await;
    assert_eq!(posts[0], POSTS);
    assert_eq!(posts[1], "any");
    assert_eq!(posts[2].replace(',', ""), (POST_COUNT - 1).to_string());
    assert!(
        posts[3].contains("langs (keyword)") && posts[3].contains("createdAt (datetime)"),
        "{posts:?}"
    );
    let notes = texts(c, &format!("tr[data-collection=\"{NOTES}\"] td")).await;
    assert_eq!(notes[2], "5");
    assert_eq!(notes[3], "none");
    assert_eq!((posts[4].as_str(), notes[4].as_str()), ("no", "yes"));
    wait_for(
        c,
        "the recent commits",
        "document.querySelector('section:last-of-type tbody tr td.changes')",
    )
    .await;
    let recent = texts(c, "section:last-of-type tbody tr td:first-child").await;
    let log = api(
        port,
        &format!("/xrpc/dev.datarepo.listCommits?repo={}&limit=10", q(REPO)),
    );
    let revs: Vec<&str> = log["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rev"].as_str().unwrap())
        .collect();
    assert_eq!(recent, revs);
    // The index builds that made the posts' indexes, as listJobs has them.
    wait_for(
        c,
        "the jobs",
        "document.querySelector('section[data-jobs] tbody tr')",
    )
    .await;
    let jobs = api(
        port,
        &format!("/xrpc/dev.datarepo.listJobs?repo={}", q(REPO)),
    );
    let shown = texts(c, "section[data-jobs] tbody tr td:first-child").await;
    let listed: Vec<&str> = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(shown, listed);
    assert_eq!(listed.len(), 2);
    let states = texts(c, "section[data-jobs] tbody tr td:nth-child(3)").await;
    assert_eq!(states, ["succeeded", "succeeded"]);
    screenshot(c, "repository").await;

    // A repository that is not there: its error once, not per section.
    c.goto(&format!("{base}/repo/did:web:nobody.example"))
        .await
        .unwrap();
    wait_for(
        c,
        "the error",
        "document.querySelector('.error') && !document.querySelector('.loading')",
    )
    .await;
    let errors = texts(c, ".error").await;
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("RepoNotFound"), "{errors:?}");
}

async fn collection_paging_and_history(c: &Client, base: &str, port: u16) {
    c.goto(&format!("{base}/repo/{}", q(REPO))).await.unwrap();
    wait_for(
        c,
        "the collections",
        &format!("document.querySelector('tr[data-collection=\"{POSTS}\"] a')"),
    )
    .await;
    click(c, &format!("tr[data-collection=\"{POSTS}\"] a")).await;
    let list = |cursor: Option<&str>, reverse: bool| {
        let mut p = format!(
            "/xrpc/com.atproto.repo.listRecords?repo={}&collection={POSTS}&limit={PAGE}",
            q(REPO)
        );
        if let Some(cur) = cursor {
            p.push_str(&format!("&cursor={}", q(cur)));
        }
        if reverse {
            p.push_str("&reverse=true");
        }
        api(port, &p)
    };
    let first = rkeys_of(&list(None, false));
    assert_eq!(shown_rkeys(c).await, first);
    let count = wait_for(
        c,
        "the count",
        "document.querySelector('.count').dataset.count",
    )
    .await;
    let api_count = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.countRecords?repo={}&collection={POSTS}",
            q(REPO)
        ),
    );
    assert_eq!(count.as_str().unwrap(), api_count["count"].to_string());
    screenshot(c, "collection").await;

    // Forward twice (the "n" key, then the link), back once by the page's
    // link, then the browser's buttons.
    c.execute(
        "document.body.dispatchEvent(new KeyboardEvent('keydown', {key: 'n', bubbles: true}))",
        vec![],
    )
    .await
    .unwrap();
    let second = rkeys_of(&list(Some(first.last().unwrap()), false));
    assert_eq!(shown_rkeys(c).await, second);
    click(c, "a[rel=next]").await;
    let third = rkeys_of(&list(Some(second.last().unwrap()), false));
    assert_eq!(shown_rkeys(c).await, third);
    click(c, "a[rel=prev]").await;
    assert!(path(c).await.contains(&format!("before={}", third[0])));
    assert_eq!(shown_rkeys(c).await, second);
    // Previous from the second page is the first page, as listRecords
    // reverse from its first key answers.
    let mut before_second = rkeys_of(&list(Some(&second[0]), true));
    before_second.reverse();
    assert_eq!(before_second, first);
    click(c, "a[rel=prev]").await;
    assert_eq!(shown_rkeys(c).await, first);
    c.back().await.unwrap();
    assert_eq!(shown_rkeys(c).await, second);
    c.back().await.unwrap();
    assert_eq!(shown_rkeys(c).await, third);
    c.forward().await.unwrap();
    assert_eq!(shown_rkeys(c).await, second);
    // A bookmarked page opens as it was.
    let here = path(c).await;
    c.goto(&format!("{base}{here}")).await.unwrap();
    assert_eq!(shown_rkeys(c).await, second);

    // Descending record keys, paged forward and back the same way.
    click(c, "a.sort").await;
    let desc_first = rkeys_of(&list(None, true));
    assert_eq!(desc_first[0], rkey(POST_COUNT - 1));
    assert_eq!(shown_rkeys(c).await, desc_first);
    click(c, "a[rel=next]").await;
    let desc_second = rkeys_of(&list(Some(desc_first.last().unwrap()), true));
    assert_eq!(shown_rkeys(c).await, desc_second);
    click(c, "a[rel=prev]").await;
    assert_eq!(shown_rkeys(c).await, desc_first);
    assert!(path(c).await.contains("order=desc"));
}

async fn queries_and_facets(c: &Client, base: &str, port: u16) {
    let coll_path = format!("/repo/{}/{POSTS}", q(REPO));
    c.goto(&format!("{base}{coll_path}")).await.unwrap();
    shown_rkeys(c).await;
    // Facets: the top languages of all posts, as topValues counts them.
    wait_for(
        c,
        "the langs facet",
        "document.querySelector('[data-facet=langs] li a')",
    )
    .await;
    let top = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.topValues?repo={}&collection={POSTS}&path=langs&limit=8",
            q(REPO)
        ),
    );
    let shown = texts(c, "[data-facet=langs] li").await;
    let expected: Vec<String> = top["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t["value"].as_str().unwrap(),
                fmt_thousands(t["count"].as_u64().unwrap())
            )
        })
        .collect();
    assert_eq!(shown, expected);

    // Clicking "ja" filters to the posts in Japanese.
    click(c, "[data-facet=langs] li:nth-child(1) a").await;
    let first_value = top["top"][0]["value"].as_str().unwrap().to_owned();
    let where_ = format!("langs = \"{first_value}\"");
    assert_eq!(
        path(c).await,
        format!("{coll_path}?where={}", q(&where_).replace("%20", "+"))
    );
    let matching = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.queryRecords?repo={}&collection={POSTS}&where={}&limit={PAGE}",
            q(REPO),
            q(&where_)
        ),
    );
    assert_eq!(shown_rkeys(c).await, rkeys_of(&matching));
    let count = wait_for(
        c,
        "the count",
        "document.querySelector('.count').dataset.count",
    )
    .await;
    assert_eq!(count.as_str().unwrap(), top["top"][0]["count"].to_string());
    screenshot(c, "collection-facet").await;

    // A query typed into the box.
    let box_ = c.find(Locator::Css("input[data-query-box]")).await.unwrap();
    box_.clear().await.unwrap();
    box_.send_keys("langs = \"de\" and createdAt >= \"2026-11-20T00:00:00Z\"")
        .await
        .unwrap();
    click(c, ".query-form button[type=submit]").await;
    let typed = "langs = \"de\" and createdAt >= \"2026-11-20T00:00:00Z\"";
    let matching = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.queryRecords?repo={}&collection={POSTS}&where={}&limit={PAGE}",
            q(REPO),
            q(typed)
        ),
    );
    assert_eq!(shown_rkeys(c).await, rkeys_of(&matching));
    let count = wait_for(
        c,
        "the count",
        "document.querySelector('.count').dataset.count",
    )
    .await;
    let api_count = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.countRecords?repo={}&collection={POSTS}&where={}",
            q(REPO),
            q(typed)
        ),
    );
    assert_eq!(count.as_str().unwrap(), api_count["count"].to_string());

    // A wrong query: the API's message, in place.
    let box_ = c.find(Locator::Css("input[data-query-box]")).await.unwrap();
    box_.clear().await.unwrap();
    box_.send_keys("langs < 3").await.unwrap();
    click(c, ".query-form button[type=submit]").await;
    let shown = wait_for(
        c,
        "the query error",
        "document.querySelector('.query-error .error').textContent",
    )
    .await;
    let (status, body) = http(
        port,
        "GET",
        &format!(
            "/xrpc/dev.datarepo.queryRecords?repo={}&collection={POSTS}&where={}",
            q(REPO),
            q("langs < 3")
        ),
        TOKEN,
        "",
    )
    .unwrap();
    assert_eq!(status, 400);
    let message = serde_json::from_str::<Value>(&body).unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        shown.as_str().unwrap().contains(&message),
        "{shown} lacks {message}"
    );
    screenshot(c, "query-error").await;
}

/// The body of `href`, fetched by the page (as following the link would).
async fn fetched(c: &Client, href: &Value) -> String {
    let body = c
        .execute(
            "return fetch(arguments[0]).then(r => r.ok ? r.text() : 'HTTP ' + r.status)",
            vec![href.clone()],
        )
        .await
        .unwrap();
    body.as_str().unwrap().to_owned()
}

/// The collection page's chosen columns, sortable headers of indexed
/// fields, the histogram of the datetime index, the group-by view and the
/// downloads, each compared with the API's answer.
async fn columns_sorting_charts_and_downloads(c: &Client, base: &str, port: u16) {
    let coll_path = format!("/repo/{}/{POSTS}", q(REPO));
    c.goto(&format!("{base}{coll_path}")).await.unwrap();
    shown_rkeys(c).await;

    // Columns chosen by path: one column each, the values the API selects.
    let columns = c
        .find(Locator::Css("input[data-fields-box]"))
        .await
        .unwrap();
    columns.send_keys("text, createdAt").await.unwrap();
    click(c, ".fields-form button[type=submit]").await;
    wait_for(
        c,
        "the chosen columns",
        "location.search.includes('fields=')",
    )
    .await;
    shown_rkeys(c).await;
    let page = api(
        port,
        &format!(
            "/xrpc/com.atproto.repo.listRecords?repo={}&collection={POSTS}&limit={PAGE}&fields=text,createdAt",
            q(REPO)
        ),
    );
    let texts_shown = texts(c, "table.record-list tbody td[data-field=text]").await;
    let texts_api: Vec<String> = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts_shown, texts_api);
    let headers = texts(c, "table.record-list thead th").await;
    assert_eq!(headers, ["Record key ↑", "text", "createdAt", "CID"]);

    // An indexed column's header sorts by it, then the other way.
    for (dir, order) in [(None, "asc"), (Some("desc"), "desc")] {
        let want = match dir {
            None => "sort=createdAt".to_owned(),
            Some(d) => format!("sort=createdAt&dir={d}"),
        };
        follow_link(
            c,
            "table.record-list thead a[data-sort-by=createdAt]",
            "the sorted page",
            &format!(
                "location.search.endsWith({})",
                serde_json::to_string(&want).unwrap()
            ),
        )
        .await;
        let sorted = api(
            port,
            &format!(
                "/xrpc/dev.datarepo.queryRecords?repo={}&collection={POSTS}&limit={PAGE}&sort=createdAt&order={order}",
                q(REPO)
            ),
        );
        assert_eq!(shown_rkeys(c).await, rkeys_of(&sorted), "sorted {order}");
        // The next page follows the sorted cursor.
        if order == "desc" {
            click(c, "nav.pager a[rel=next]").await;
            wait_for(
                c,
                "the next sorted page",
                "location.search.includes('cursor=')",
            )
            .await;
            let next = api(
                port,
                &format!(
                    "/xrpc/dev.datarepo.queryRecords?repo={}&collection={POSTS}&limit={PAGE}&sort=createdAt&order=desc&cursor={}",
                    q(REPO),
                    q(sorted["cursor"].as_str().unwrap())
                ),
            );
            assert_eq!(
                shown_rkeys(c).await,
                rkeys_of(&next),
                "the second sorted page"
            );
        }
    }

    // The histogram of createdAt by day: a bar per bucket, as the API counts.
    c.goto(&format!("{base}{coll_path}")).await.unwrap();
    shown_rkeys(c).await;
    let bars = wait_for(
        c,
        "the histogram",
        "[...document.querySelectorAll('figure.histogram svg rect')].map(r => [r.dataset.start, Number(r.dataset.count)])",
    )
    .await;
    let buckets = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.aggregateRecords?repo={}&collection={POSTS}&histogram=createdAt&interval=1d",
            q(REPO)
        ),
    );
    let want: Vec<Value> = buckets["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| json!([b["start"], b["count"]]))
        .collect();
    assert_eq!(bars, Value::Array(want));
    assert!(bars.as_array().unwrap().len() >= 28);

    // Counts per language, opened from "Group by".
    click(c, "details[data-group-by] summary").await;
    let shown = wait_for(
        c,
        "the groups",
        "[...document.querySelectorAll('.group-table tbody tr')].map(r => [...r.children].map(td => td.textContent))",
    )
    .await;
    let groups = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.aggregateRecords?repo={}&collection={POSTS}&groupBy=langs&limit=50",
            q(REPO)
        ),
    );
    let want: Vec<Value> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| json!([g["key"][0], fmt_thousands(g["count"].as_u64().unwrap())]))
        .collect();
    assert_eq!(shown, Value::Array(want));

    // The downloads: the whole answer, streamed; the CSV has a header row
    // and one row per record, the JSON Lines one record per line.
    let href = wait_for(
        c,
        "the CSV download",
        "document.querySelector('a[data-download=csv]').getAttribute('href')",
    )
    .await;
    let csv = fetched(c, &href).await;
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines[0], "uri,cid,value");
    let href = wait_for(
        c,
        "the JSON Lines download",
        "document.querySelector('a[data-download=jsonl]').getAttribute('href')",
    )
    .await;
    let jsonl = fetched(c, &href).await;
    let records: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.countRecords?repo={}&collection={POSTS}",
            q(REPO)
        ),
    )["count"]
        .as_u64()
        .unwrap();
    assert_eq!(records.len() as u64, count);
    assert_eq!(lines.len() as u64, count + 1);
    screenshot(c, "collection-explore").await;
}

async fn record_and_history(c: &Client, base: &str, port: u16) {
    c.goto(&format!("{base}/repo/{}/{POSTS}", q(REPO)))
        .await
        .unwrap();
    shown_rkeys(c).await;
    // Rows preview their fields, arrays of scalars by their values (the
    // posts' `langs`), not by their lengths.
    let rows = texts(c, "tbody tr[data-rkey]").await.join("\n");
    assert!(rows.contains(r#"langs: [""#), "{rows}");
    assert!(
        !rows.contains("langs: [1]") && !rows.contains("langs: [2]"),
        "{rows}"
    );
    let placeholder = c
        .find(Locator::Css("input[data-query-box]"))
        .await
        .unwrap()
        .attr("placeholder")
        .await
        .unwrap()
        .unwrap();
    assert!(
        placeholder.contains("createdAt") || placeholder.contains("langs"),
        "{placeholder}"
    );
    follow_link(
        c,
        &format!("tr[data-rkey={}] a", rkey(5)),
        "the record",
        "document.querySelector('pre.json')",
    )
    .await;
    let record = api(
        port,
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection={POSTS}&rkey={}",
            q(REPO),
            rkey(5)
        ),
    );
    wait_for(c, "the record", "document.querySelector('pre.json')").await;
    let facts = texts(c, "dl.facts dd").await;
    assert_eq!(facts[0], record["uri"].as_str().unwrap());
    assert_eq!(facts[1], record["cid"].as_str().unwrap());
    let json_text = texts(c, "pre.json").await.remove(0);
    let parsed: Value =
        serde_json::from_str(&json_text).expect("the page shows the record as JSON");
    assert_eq!(parsed, record["value"]);

    // History: the create and the two updates, newest first.
    wait_for(c, "the history", "document.querySelector('table.history')").await;
    let history = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.getRecordHistory?repo={}&collection={POSTS}&rkey={}",
            q(REPO),
            rkey(5)
        ),
    );
    let actions: Vec<String> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(actions, ["update", "update", "create"]);
    let shown: Vec<String> = texts(c, "table.history tbody tr").await;
    assert_eq!(shown.len(), 3);
    let revs = texts(c, "table.history tbody tr td:first-child").await;
    let api_revs: Vec<String> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["commit"]["rev"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(revs, api_revs);
    // What the newest update changed: the text.
    click(c, "table.history tbody tr:first-child button.link").await;
    let changed = wait_for(c, "what changed", "[...document.querySelectorAll('table.history tbody tr:first-child td')][2].textContent.includes('fields:') && [...document.querySelectorAll('table.history tbody tr:first-child td')][2].textContent").await;
    assert!(
        changed.as_str().unwrap().contains("fields: text"),
        "{changed}"
    );
    screenshot(c, "record").await;
    // The oldest version, as it was.
    click(c, "table.history tbody tr:last-child td:first-child a").await;
    wait_for(
        c,
        "the old version",
        "document.querySelector('p.notice') && document.querySelector('pre.json')",
    )
    .await;
    let old: Value = serde_json::from_str(&texts(c, "pre.json").await.remove(0)).unwrap();
    assert_eq!(old, post(5));

    // An at:// URI in a record is a link to that record.
    c.goto(&format!("{base}/repo/{}/{POSTS}/{}", q(REPO), rkey(3)))
        .await
        .unwrap();
    wait_for(c, "the reply link", "document.querySelector('pre.json a')").await;
    click(c, "pre.json a").await;
    wait_for(c, "the parent", "document.querySelector('pre.json')").await;
    assert_eq!(
        path(c).await,
        format!("/repo/{}/{POSTS}/{}", q(REPO), rkey(1))
    );
    // A long value is cut, and shown whole on request.
    c.goto(&format!("{base}/repo/{}/{NOTES}/long", q(REPO)))
        .await
        .unwrap();
    wait_for(
        c,
        "the record",
        "document.querySelector('pre.json button.more')",
    )
    .await;
    let long = "a long note ".repeat(200);
    assert!(!texts(c, "pre.json").await[0].contains(&long));
    click(c, "pre.json button.more").await;
    let whole: Value = serde_json::from_str(&texts(c, "pre.json").await.remove(0)).unwrap();
    assert_eq!(whole["body"], json!(long));
    // A `$link` leads to the block it names.
    c.goto(&format!("{base}/repo/{}/{NOTES}/linked", q(REPO)))
        .await
        .unwrap();
    wait_for(c, "the link", "document.querySelector('pre.json a')").await;
    click(c, "pre.json a").await;
    wait_for(
        c,
        "the block",
        "location.pathname.includes('/block/') && document.querySelector('pre.json')",
    )
    .await;
    let long_record = api(
        port,
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection={NOTES}&rkey=long",
            q(REPO)
        ),
    );
    assert!(
        path(c)
            .await
            .ends_with(long_record["cid"].as_str().unwrap())
    );
    click(c, "pre.json button.more").await;
    let block: Value = serde_json::from_str(&texts(c, "pre.json").await.remove(0)).unwrap();
    assert_eq!(block, long_record["value"]);
    assert_eq!(texts(c, "dl.facts dd").await[1], "dag-cbor");
    // A deleted record says so, with its history.
    c.goto(&format!("{base}/repo/{}/{POSTS}/{}", q(REPO), rkey(7)))
        .await
        .unwrap();
    let err = wait_for(
        c,
        "not found",
        "document.querySelector('.error') && document.querySelector('.error').textContent",
    )
    .await;
    assert!(err.as_str().unwrap().contains("RecordNotFound"), "{err}");
    wait_for(c, "the history", "document.querySelector('table.history')").await;
    assert_eq!(
        texts(c, "table.history tbody tr td:nth-child(3)").await,
        ["delete", "create"]
    );
    // A record that never existed: its history is known to be empty (one
    // read of its history entries), with nothing older to look at.
    c.goto(&format!("{base}/repo/{}/{POSTS}/never-written", q(REPO)))
        .await
        .unwrap();
    wait_for(c, "the empty history", "document.querySelector('p.empty')").await;
    let buttons = texts(c, "button").await;
    assert!(
        !buttons.iter().any(|b| b.contains("older commits")),
        "{buttons:?}"
    );
}

async fn commits(c: &Client, base: &str, port: u16) {
    c.goto(&format!("{base}/repo/{}", q(REPO))).await.unwrap();
    wait_for(c, "the log link", "document.querySelector('p.actions a')").await;
    click(c, "p.actions a:first-child").await;
    wait_for(
        c,
        "the commits",
        "document.querySelector('table.commit-list')",
    )
    .await;
    let log = api(
        port,
        &format!("/xrpc/dev.datarepo.listCommits?repo={}&limit=50", q(REPO)),
    );
    let revs: Vec<String> = log["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rev"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        texts(c, "table.commit-list tbody tr td:first-child").await,
        revs
    );
    // Each row says what its commit changed: the newest deleted a post,
    // the one before updated one.
    let changes = texts(c, "table.commit-list tbody tr td.changes").await;
    assert_eq!(changes[..2], ["1 deleted", "1 updated"], "{changes:?}");
    screenshot(c, "commits").await;
    click(c, "a[rel=next]").await;
    wait_for(
        c,
        "older commits",
        "document.querySelector('table.commit-list')",
    )
    .await;
    let older = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.listCommits?repo={}&limit=50&cursor={}",
            q(REPO),
            log["cursor"].as_str().unwrap()
        ),
    );
    let older_revs: Vec<String> = older["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rev"].as_str().unwrap().to_owned())
        .collect();
    wait_for(
        c,
        "the older page",
        &format!(
            "document.querySelector('table.commit-list tbody tr td').textContent === '{}'",
            older_revs[0]
        ),
    )
    .await;
    assert_eq!(
        texts(c, "table.commit-list tbody tr td:first-child").await,
        older_revs
    );
    c.back().await.unwrap();
    wait_for(
        c,
        "the newest page",
        &format!(
            "document.querySelector('table.commit-list tbody tr td').textContent === '{}'",
            revs[0]
        ),
    )
    .await;
    // The newest commit deleted a post; the one before updated one.
    click(c, "table.commit-list tbody tr:first-child a").await;
    wait_for(c, "the changes", "document.querySelector('table.ops')").await;
    let commit = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.getCommit?repo={}&rev={}",
            q(REPO),
            revs[0]
        ),
    );
    assert_eq!(commit["ops"].as_array().unwrap().len(), 1);
    assert_eq!(
        texts(c, "table.ops tbody tr td:first-child").await,
        ["delete"]
    );
    assert_eq!(
        texts(c, "table.ops tbody tr td:nth-child(2)").await,
        [format!("{POSTS}/{}", rkey(7))]
    );
    c.goto(&format!("{base}/repo/{}/commit/{}", q(REPO), revs[1]))
        .await
        .unwrap();
    wait_for(c, "the changes", "document.querySelector('table.ops')").await;
    assert_eq!(
        texts(c, "table.ops tbody tr td:first-child").await,
        ["update"]
    );
    click(c, "table.ops tbody tr td:nth-child(2) a").await;
    wait_for(
        c,
        "the record at that rev",
        "document.querySelector('pre.json')",
    )
    .await;
    let at: Value = serde_json::from_str(&texts(c, "pre.json").await.remove(0)).unwrap();
    assert_eq!(at["text"], "post five, edited again");
    // "Previous" leads to the commit before (the log's next one).
    c.goto(&format!("{base}/repo/{}/commit/{}", q(REPO), revs[1]))
        .await
        .unwrap();
    wait_for(
        c,
        "the facts",
        "document.querySelector('dl.facts a[href*=\"/commit/\"]')",
    )
    .await;
    let previous = c
        .find(Locator::Css("dl.facts a[href*=\"/commit/\"]"))
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .unwrap();
    assert!(
        previous.ends_with(&format!("/commit/{}", revs[2])),
        "{previous}"
    );
    // The first batch of posts (the commit after the repository's first,
    // empty one) lists every record it created.
    let first_batch = &older_revs[older_revs.len() - 2];
    let batch = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.getCommit?repo={}&rev={first_batch}",
            q(REPO)
        ),
    );
    assert_eq!(batch["ops"].as_array().unwrap().len(), 200);
    c.goto(&format!("{base}/repo/{}/commit/{first_batch}", q(REPO)))
        .await
        .unwrap();
    wait_for(c, "the changes", "document.querySelector('table.ops')").await;
    let heading = texts(c, "section h2").await;
    assert!(
        heading.contains(&"Changes (200 created, 0 updated, 0 deleted)".to_owned()),
        "{heading:?}"
    );
    assert_eq!(
        texts(c, "table.ops tbody tr").await.len(),
        batch["ops"].as_array().unwrap().len()
    );
    screenshot(c, "commit").await;
}

async fn pail_tree(c: &Client, base: &str, port: u16) {
    // From a record: the way down to it highlighted.
    c.goto(&format!("{base}/repo/{}/{POSTS}/{}", q(REPO), rkey(4321)))
        .await
        .unwrap();
    wait_for(c, "the record", "document.querySelector('pre.json')").await;
    click(c, "p.actions a").await;
    wait_for(c, "the highlighted entry", "document.querySelector('.view[data-ready=tree]') && document.querySelector('li[aria-current]')").await;
    let way = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.getPailPath?repo={}&collection={POSTS}&rkey={}",
            q(REPO),
            rkey(4321)
        ),
    );
    let steps = way["steps"].as_array().unwrap();
    assert!(
        steps.len() >= 2,
        "{POST_COUNT} posts make a tree deeper than one shard: {way}"
    );
    let on_path: Vec<Value> = serde_json::from_value(
        c.execute(
            "return [...document.querySelectorAll('li.shard.on-path')].map(e => e.dataset.cid)",
            vec![],
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let want: Vec<Value> = steps.iter().map(|s| s["shard"].clone()).collect();
    assert_eq!(on_path, want);
    let current = c
        .execute(
            "return document.querySelector('li[aria-current]').dataset.key",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(current, steps.last().unwrap()["entry"]);
    screenshot(c, "pail-path").await;

    // From the repository: the root, then a child opened by its toggle.
    c.goto(&format!("{base}/repo/{}/pail", q(REPO)))
        .await
        .unwrap();
    wait_for(
        c,
        "the root's entries",
        "document.querySelector('li.shard > ul > li.entry')",
    )
    .await;
    let root = way["root"].as_str().unwrap();
    let shard = api(
        port,
        &format!("/xrpc/dev.datarepo.getShard?repo={}&cid={root}", q(REPO)),
    );
    let summary = texts(c, "ul.tree > li.shard > .node .summary")
        .await
        .remove(0);
    assert!(
        summary.starts_with(&format!("{} entr", shard["entryCount"])),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "of {} bytes",
            fmt_thousands(shard["maxSize"].as_u64().unwrap())
        )),
        "{summary}"
    );
    let entries = texts(c, "ul.tree > li.shard > ul > li.entry > .node .key").await;
    let api_keys: Vec<String> = shard["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(entries, api_keys);
    let child_count = c
        .execute(
            "return document.querySelectorAll('li.shard li.shard').length",
            vec![],
        )
        .await
        .unwrap();
    assert!(
        child_count.as_u64().unwrap() >= 1,
        "the root links to child shards"
    );
    // An unopened child shows its size and entry count, as the API does.
    let child_cid = c
        .execute(
            "return document.querySelector('li.shard li.shard').dataset.cid",
            vec![],
        )
        .await
        .unwrap();
    let child = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.getShard?repo={}&cid={}",
            q(REPO),
            child_cid.as_str().unwrap()
        ),
    );
    let child_summary = texts(c, "li.shard li.shard > .node .summary")
        .await
        .remove(0);
    assert!(
        child_summary.starts_with(&format!("{} entr", child["entryCount"]))
            && child_summary.contains(&format!(
                "{} of",
                fmt_thousands(child["size"].as_u64().unwrap())
            )),
        "{child_summary} against {child}"
    );
    // Children's entries are not loaded until opened.
    let loaded_before = c.execute("return performance.getEntriesByType('resource').filter(r => r.name.includes('getShard')).length", vec![]).await.unwrap();
    assert_eq!(loaded_before, json!(1));
    click(c, "li.shard li.shard button.toggle").await;
    wait_for(
        c,
        "the child's entries",
        "document.querySelector('li.shard li.shard > ul > li.entry')",
    )
    .await;
    let shown = c
        .execute(
            "return document.querySelectorAll('li.shard li.shard > ul > li.entry').length",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        shown.as_u64().unwrap() as usize,
        child["entries"].as_array().unwrap().len()
    );
    screenshot(c, "pail-tree").await;
    // Collapsing hides them again.
    click(c, "li.shard li.shard button.toggle").await;
    let hidden = c
        .execute(
            "return document.querySelector('li.shard li.shard > ul').hidden",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(hidden, json!(true));
}

fn fmt_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

async fn writes(c: &Client, base: &str, port: u16) {
    let coll_url = format!("{base}/repo/{}/{NOTES}", q(REPO));
    c.goto(&coll_url).await.unwrap();
    shown_rkeys(c).await;
    // The collection's Lexicon, read when opened.
    click(c, "details#lexicon summary").await;
    wait_for(
        c,
        "the Lexicon",
        "document.querySelector('details#lexicon pre.json')",
    )
    .await;
    let shown: Value =
        serde_json::from_str(&texts(c, "details#lexicon pre.json").await.remove(0)).unwrap();
    let api_doc = api(
        port,
        &format!(
            "/xrpc/dev.datarepo.getLexicon?repo={}&nsid={NOTES}",
            q(REPO)
        ),
    );
    assert_eq!(shown, api_doc["lexicon"]);
    assert_eq!(api_doc["lexicon"], note_lexicon());
    assert!(
        texts(c, "details#lexicon p")
            .await
            .contains(&"A short note.".to_owned())
    );
    // Without a token there is no way to write.
    let new_button = c.find(Locator::Css("button.write-only")).await.unwrap();
    assert!(!new_button.is_displayed().await.unwrap());

    // With a wrong token the server refuses, and the page says why.
    set_token(c, "not-the-token").await;
    let said = wait_for(c, "the token's check", "document.querySelector('#token-state').textContent.includes('refuses') && document.querySelector('#token-state').textContent").await;
    assert!(said.as_str().unwrap().contains("refuses"), "{said}");
    shown_rkeys(c).await;
    click(c, "button.write-only").await;
    let editor = c.find(Locator::Css("textarea.editor")).await.unwrap();
    editor.clear().await.unwrap();
    editor.send_keys(r#"{"body": "refused"}"#).await.unwrap();
    c.find(Locator::Css("input.rkey"))
        .await
        .unwrap()
        .send_keys("refused")
        .await
        .unwrap();
    click(c, ".edit-form button[type=submit]").await;
    let refused = wait_for(c, "the refusal", "document.querySelector('.write-message .error') && document.querySelector('.write-message .error').textContent").await;
    let (status, _) = http(
        port,
        "GET",
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection={NOTES}&rkey=refused",
            q(REPO)
        ),
        TOKEN,
        "",
    )
    .unwrap();
    assert_eq!(status, 400, "nothing was written");
    let (_, body) = http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.createRecord",
        "not-the-token",
        "{}",
    )
    .unwrap();
    let api_message = serde_json::from_str::<Value>(&body).unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        refused.as_str().unwrap().contains(&api_message),
        "{refused} lacks {api_message}"
    );
    click(c, "#token-clear").await;

    // With the token: create…
    set_token(c, TOKEN).await;
    wait_for(
        c,
        "the token accepted",
        "document.querySelector('#token-state').textContent.includes('accepted')",
    )
    .await;
    shown_rkeys(c).await;
    click(c, "button.write-only").await;
    let editor = c.find(Locator::Css("textarea.editor")).await.unwrap();
    editor.clear().await.unwrap();
    editor
        .send_keys(r#"{"body": "written in a browser"}"#)
        .await
        .unwrap();
    c.find(Locator::Css("input.rkey"))
        .await
        .unwrap()
        .send_keys("browser")
        .await
        .unwrap();
    screenshot(c, "create").await;
    click(c, ".edit-form button[type=submit]").await;
    wait_for(
        c,
        "the new record",
        "location.pathname.endsWith('/browser') && document.querySelector('pre.json')",
    )
    .await;
    let created = api(
        port,
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection={NOTES}&rkey=browser",
            q(REPO)
        ),
    );
    assert_eq!(created["value"]["body"], "written in a browser");
    assert_eq!(
        texts(c, "dl.facts dd").await[1],
        created["cid"].as_str().unwrap()
    );

    // …edit…
    click(c, "p.actions button.write-only").await;
    let editor = c.find(Locator::Css("textarea.editor")).await.unwrap();
    editor.clear().await.unwrap();
    editor
        .send_keys(r#"{"body": "edited in a browser"}"#)
        .await
        .unwrap();
    click(c, ".edit-form button[type=submit]").await;
    wait_for(c, "the edited record", "document.querySelector('pre.json') && document.querySelector('pre.json').textContent.includes('edited in a browser')").await;
    let edited = api(
        port,
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection={NOTES}&rkey=browser",
            q(REPO)
        ),
    );
    assert_eq!(edited["value"]["body"], "edited in a browser");

    // …a stale page cannot overwrite a newer version…
    click(c, "p.actions button.write-only").await;
    let (s, b) = api_post(
        port,
        "com.atproto.repo.putRecord",
        &json!({"repo": REPO, "collection": NOTES, "rkey": "browser", "record": {"body": "written elsewhere"}}),
    );
    assert_eq!(s, 200, "{b}");
    let editor = c.find(Locator::Css("textarea.editor")).await.unwrap();
    editor.clear().await.unwrap();
    editor.send_keys(r#"{"body": "stale"}"#).await.unwrap();
    click(c, ".edit-form button[type=submit]").await;
    let stale = wait_for(c, "the swap refusal", "document.querySelector('.write-message .error') && document.querySelector('.write-message .error').textContent").await;
    assert!(stale.as_str().unwrap().contains("InvalidSwap"), "{stale}");
    let kept = api(
        port,
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection={NOTES}&rkey=browser",
            q(REPO)
        ),
    );
    assert_eq!(kept["value"]["body"], "written elsewhere");

    // …a record its Lexicon does not allow is refused with the validator's
    // message…
    c.refresh().await.unwrap();
    wait_for(c, "the record", "document.querySelector('pre.json')").await;
    click(c, "p.actions button.write-only").await;
    let editor = c.find(Locator::Css("textarea.editor")).await.unwrap();
    editor.clear().await.unwrap();
    editor.send_keys(r#"{"body": 5}"#).await.unwrap();
    click(c, ".edit-form button[type=submit]").await;
    let invalid = wait_for(c, "the validation error", "document.querySelector('.write-message .error') && document.querySelector('.write-message .error').textContent").await;
    assert!(
        invalid.as_str().unwrap().contains("InvalidRecord"),
        "{invalid}"
    );
    let (status, body) = http(
        port,
        "POST",
        "/xrpc/com.atproto.repo.putRecord",
        TOKEN,
        &json!({"repo": REPO, "collection": NOTES, "rkey": "browser", "record": {"body": 5}})
            .to_string(),
    )
    .unwrap();
    assert_eq!(status, 400);
    let api_message = serde_json::from_str::<Value>(&body).unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        invalid.as_str().unwrap().contains(&api_message),
        "{invalid} lacks {api_message}"
    );

    // …and delete, after the person confirms.
    c.refresh().await.unwrap();
    wait_for(c, "the record", "document.querySelector('pre.json')").await;
    click(c, "button.danger").await;
    c.accept_alert().await.unwrap();
    wait_for(
        c,
        "the collection",
        &format!("location.pathname === '/repo/{}/{NOTES}'", q(REPO)),
    )
    .await;
    let (status, _) = http(
        port,
        "GET",
        &format!(
            "/xrpc/com.atproto.repo.getRecord?repo={}&collection={NOTES}&rkey=browser",
            q(REPO)
        ),
        TOKEN,
        "",
    )
    .unwrap();
    assert_eq!(status, 400, "the record is gone");
    click(c, "#token-clear").await;
}

/// Load time and weight of a collection's first page, opened in a new
/// browser (nothing cached).
async fn page_weight_and_time(driver: &Driver, base: &str) {
    let c = &browser(driver, false, 1280, 900).await;
    c.goto(&format!("{base}/repo/{}/{POSTS}", q(REPO)))
        .await
        .unwrap();
    shown_rkeys(c).await;
    // Facets and the count arrive after the records; all of it counts.
    wait_for(
        c,
        "the count",
        "document.querySelector('.count').dataset.count",
    )
    .await;
    wait_for(
        c,
        "the facets",
        "document.querySelector('[data-facet=langs] li a')",
    )
    .await;
    wait_for(c, "the histogram", "document.querySelector('svg.bars')").await;
    // Nothing moves once the records are shown (a click on a record must
    // land where the reader saw it): Chromium's layout-shift entries
    // since then, as the Layout Instability API reports them.
    let shifts = c
        .execute(
            "const shown = performance.getEntriesByName('records-shown')[0].startTime;
             return await new Promise((resolve) => {
               new PerformanceObserver((list) => resolve(list.getEntries()
                 .filter((e) => e.startTime >= shown && !e.hadRecentInput)
                 .map((e) => ({ value: e.value, at: e.startTime,
                   moved: e.sources.map((s) => (s.node ? s.node.nodeName + '.' + (s.node.className || '') + '#' + (s.node.id || '') : '?') + JSON.stringify([s.previousRect.y, s.previousRect.height, s.currentRect.y, s.currentRect.height])) }))))
                 .observe({ type: 'layout-shift', buffered: true });
               setTimeout(() => resolve([]), 500);
             });",
            vec![],
        )
        .await
        .unwrap();
    let total: f64 = shifts
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["value"].as_f64().unwrap())
        .sum();
    assert!(
        total < 0.001,
        "the page moved after its records were shown: {shifts}"
    );
    let m = c
        .execute(
            "const nav = performance.getEntriesByType('navigation')[0];
             const res = performance.getEntriesByType('resource');
             return { shown: performance.getEntriesByName('records-shown')[0].startTime,
                      bytes: nav.transferSize + res.reduce((n, r) => n + r.transferSize, 0),
                      requests: res.length + 1 };",
            vec![],
        )
        .await
        .unwrap();
    let bytes = m["bytes"].as_u64().unwrap();
    println!(
        "collection page of {POST_COUNT} posts: records shown {:.0} ms after navigation, {bytes} bytes in {} requests",
        m["shown"].as_f64().unwrap(),
        m["requests"]
    );
    // A budget on bytes (not on time): the page, its files and its data.
    assert!(bytes > 0 && bytes <= 150 * 1024, "{bytes} bytes");
    c.clone().close().await.unwrap();
}

/// Screenshots only: a phone-sized window and the dark scheme.
async fn more_screenshots(driver: &Driver, base: &str) {
    let c = browser(driver, true, 1280, 900).await;
    c.goto(&format!("{base}/repo/{}/{POSTS}", q(REPO)))
        .await
        .unwrap();
    shown_rkeys(&c).await;
    wait_for(
        &c,
        "the facets",
        "document.querySelector('[data-facet=langs] li a')",
    )
    .await;
    screenshot(&c, "collection-dark").await;
    c.close().await.unwrap();
    let c = browser(driver, false, 390, 844).await;
    c.goto(&format!("{base}/repo/{}/{POSTS}/{}", q(REPO), rkey(5)))
        .await
        .unwrap();
    wait_for(&c, "the history", "document.querySelector('table.history')").await;
    screenshot(&c, "record-phone").await;
    c.close().await.unwrap();
}
