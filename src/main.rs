//! The `sluice` binary: command line, logging, signals and the process lifecycle.
//!
//! `sluice -f pipeline.conf` (or `-e '...'`) loads the config, builds every plugin (so a bad
//! option fails before anything runs), starts the pipeline and runs until its inputs finish or
//! a signal arrives; then it drains the queue and exits 0. `sluice config parse` prints the
//! parsed config as JSON; `-t` checks a config and exits; `sluice test` runs pipeline unit
//! tests ([`verify`]); `sluice tap` watches a running one's events ([`tap`]).

mod agent;
mod cli;
mod log;
mod run;
mod shutdown;
mod tap;
mod verify;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let result = match &args.command {
        Some(cli::Command::Config {
            action: cli::ConfigAction::Parse(src),
        }) => run::config_parse(src),
        Some(cli::Command::Queue { action }) => {
            let _ = log::init(&log::LogOptions {
                level: args.log_level.as_deref(),
                ..Default::default()
            });
            run::queue_tool(action)
        }
        Some(cli::Command::Test(t)) => {
            let _ = log::init(&log::LogOptions {
                level: Some(args.log_level.as_deref().unwrap_or("warn")),
                ..Default::default()
            });
            verify::test_command(t)
        }
        Some(cli::Command::Tap(t)) => tap::tap_command(t),
        None => run::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

/// Events are allocated by input threads and freed by worker threads; glibc's malloc serialises
/// such cross-thread frees on its arena locks (a third of CPU time in generator → null).
/// mimalloc frees to the owning thread's heap without a global lock.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
