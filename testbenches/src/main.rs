//! The `hvia` command: parses the command line, runs it, prints the result.
//!
//! Exit status: 0 on success, 2 on bad input (clap usage errors, every configuration
//! error and every bad option value, printed to stderr by miette), 1 when a simulation
//! fails (a model error, not the input's).

use clap::Parser;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use testbenches::cli::{run, Cli};

fn main() -> ExitCode {
    init_tracing();
    let cli = Cli::parse();
    init_error_reports();
    match run(&cli) {
        Ok(outcome) => {
            write_ignoring_broken_pipe(&mut std::io::stdout().lock(), &outcome.stdout);
            write_ignoring_broken_pipe(&mut std::io::stderr().lock(), &outcome.stderr);
            ExitCode::from(outcome.status)
        }
        Err(err) => {
            let report = miette::Report::new(err);
            write_ignoring_broken_pipe(&mut std::io::stderr().lock(), &format!("{report:?}\n"));
            ExitCode::from(2)
        }
    }
}

/// Logs go to stderr, filtered by `RUST_LOG` (default: warnings and errors only).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// Error reports: colours and Unicode only on a terminal (and not under `NO_COLOR`);
/// elsewhere plain ASCII without line wrapping, so logs and `grep` see whole messages.
fn init_error_reports() {
    let terminal = std::io::stderr().is_terminal();
    let fancy = terminal && std::env::var_os("NO_COLOR").is_none();
    // Setting the hook fails only if one is already set; the default is then used.
    let _ = miette::set_hook(Box::new(move |_| {
        let opts = miette::MietteHandlerOpts::new()
            .color(fancy)
            .unicode(fancy)
            .terminal_links(false);
        let opts = if terminal { opts } else { opts.width(NO_WRAP) };
        Box::new(opts.build())
    }));
}

/// Report width when stderr is not a terminal: wide enough never to wrap a message.
const NO_WRAP: usize = 10_000;

/// Writes `text`; a closed pipe (`hvia config --show | head`) is not an error.
fn write_ignoring_broken_pipe(out: &mut impl Write, text: &str) {
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}
