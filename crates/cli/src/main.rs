//! `datarepo`: the command-line tool. Argument parsing and printing only;
//! all behaviour lives in the library crates.

#![warn(clippy::unwrap_used)]
// Doc comments here are also `--help` text, written for a terminal
// (`literal:<value>`, `[[K,CID],...]`), not as rustdoc markup.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: the server allocates many small, short-lived buffers per
/// request across threads, where it beats glibc's allocator (measured in
/// `docs/benchmarks.md`, server load test).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod account_cmd;
mod archive_cmd;
mod blob_cmd;
mod client;
mod collection_cmd;
mod commands;
mod follow;
mod history_cmd;
mod index_cmd;
mod key_files;
mod keys;
mod lexicon_cmd;
mod logs;
mod output;
mod pail_cmd;
mod record_table;
mod records_cmd;
mod repo_cmd;
mod repos_cmd;
mod serve;
mod session;
mod signing_cmd;
mod storage;
mod syntax;
mod writer_lease;

/// datarepo: a content-addressed data repository of records.
#[derive(Debug, Parser)]
#[command(name = "datarepo", version, about, max_term_width = 100)]
struct Cli {
    #[command(flatten)]
    store: storage::StoreArgs,
    #[command(flatten)]
    repo: crate::commands::RepoArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the repositories over HTTP (AT Protocol's XRPC API).
    Serve(Box<serve::ServeArgs>),
    #[command(flatten)]
    Repo(crate::commands::RepoCommand),
    /// Record keys: validate them.
    #[command(subcommand)]
    Rkey(syntax::RkeyCommand),
    /// Timestamp identifiers (TIDs): validate, make and decode them.
    #[command(subcommand)]
    Tid(syntax::TidCommand),
    /// Pail trees: apply operations, or keep a tree in a CAR file.
    #[command(subcommand)]
    Pail(pail_cmd::PailCommand),
    /// Delete blocks that no retained commit reaches. Opens the store as its
    /// writer: stop a running server first, or let it collect
    /// (`serve --gc-interval-secs`).
    Gc(storage::GcArgs),
    /// Follow a server's firehose (com.atproto.sync.subscribeRepos): one line
    /// per commit (JSON Lines with --json), resuming from the last one when
    /// the connection drops.
    Follow(follow::FollowArgs),
    /// Storage keys: build and explain them (a key inspector).
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Print a shell completion script (e.g. `datarepo completions bash >
    /// ~/.local/share/bash-completion/completions/datarepo`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn io_error(error: impl Into<output::CliError>) -> std::io::Error {
    std::io::Error::other(error.into())
}

/// Exit codes: 0 success, 1 invalid input or a failed operation, 2 usage.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let json_mode = cli.repo.json;
    if let Command::Completions { shell } = cli.command {
        use clap::CommandFactory;
        let mut out = output::Stdout::buffered();
        clap_complete::generate(shell, &mut Cli::command(), "datarepo", &mut out);
        return ExitCode::SUCCESS;
    }
    if !matches!(cli.command, Command::Serve(_)) {
        // Warnings (a slow store, a retried request) for one-shot commands.
        let _ = logs::init_logs("warn", "text", false);
    }
    let result = match cli.command {
        Command::Rkey(cmd) => syntax::run_rkey(cmd, cli.repo.json),
        Command::Tid(cmd) => syntax::run_tid(cmd, cli.repo.json),
        Command::Keys(cmd) => keys::run(cmd, cli.repo.json),
        Command::Follow(args) => {
            follow::run(&args, cli.repo.repo.as_deref(), cli.repo.json).map_err(io_error)
        }
        Command::Pail(cmd) => pail_cmd::run(cmd, cli.repo.json),
        Command::Gc(args) => {
            storage::gc(&cli.store, &args, cli.repo.repo.as_deref(), cli.repo.json)
        }
        Command::Serve(args) => serve::run(&cli.store, &args).map_err(io_error),
        Command::Repo(cmd) => repo_cmd::run(&cli.store, &cli.repo, cmd).map_err(io_error),
        Command::Completions { .. } => Ok(ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            output::report_error(json_mode, output::error_name(&e), &e);
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every command's arguments are consistent (clap checks ids, conflicts
    /// and defaults only when a command is built).
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
