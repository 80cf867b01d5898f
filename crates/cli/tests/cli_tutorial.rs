//! `docs/tutorial.md` runs as written: its `sh` blocks, in order, in an
//! empty directory, with this build's `datarepo` on the PATH; each command
//! must succeed.

use std::process::Command;

#[test]
fn the_tutorial_runs_as_written() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/tutorial.md"
    ))
    .unwrap();
    let mut script = String::from("set -euo pipefail\nunset DATAREPO_STORE DATAREPO_SERVER\n");
    let mut in_sh = false;
    let mut blocks = 0;
    for line in doc.lines() {
        match (in_sh, line) {
            (false, "```sh") => {
                in_sh = true;
                blocks += 1;
            }
            (true, "```") => in_sh = false,
            (true, line) => {
                script.push_str(line);
                script.push('\n');
            }
            _ => {}
        }
    }
    assert!(blocks >= 6, "found {blocks} sh blocks");
    let tmp = testkit::tempdir("cli-tutorial");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_datarepo"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(tmp.path())
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the tutorial failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The restored store answers the query as the original did.
    let counts: Vec<&str> = stdout.lines().filter(|l| l.trim() == "2").collect();
    assert_eq!(counts.len(), 2, "{stdout}");
}
