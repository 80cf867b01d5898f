//! `datarepo completions bash|zsh|fish` prints a completion script that
//! knows the commands and their flags (bash's parses as bash).

use crate::common;

use common::datarepo;

#[test]
fn completion_scripts_name_the_commands() {
    for shell in ["bash", "zsh", "fish"] {
        let out = datarepo(&["completions", shell], "");
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = String::from_utf8(out.stdout).unwrap();
        for word in ["serve", "export", "history", "import", "query"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
        if shell == "bash" {
            let tmp = testkit::tempdir("cli-completions");
            let file = tmp.path().join("c.bash");
            std::fs::write(&file, &script).unwrap();
            let check = std::process::Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .unwrap();
            assert!(check.status.success(), "{check:?}");
        }
    }
    let out = datarepo(&["completions", "tcsh-not-a-shell"], "");
    assert_eq!(out.status.code(), Some(2));
}
