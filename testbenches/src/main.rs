//! The `hvia` command: parses the command line, runs it, prints the result.
//!
//! Exit status: 0 on success, 2 on bad input (clap usage errors, every configuration
//! error and every bad option value, printed to stderr by miette), 1 when a simulation
//! fails (a model error, not the input's) or the output cannot be written (a full disk,
//! a closed stdout). A broken pipe (`hvia config --show | head`) is not an error.

use clap::Parser;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use testbenches::cli::{run, Cli};

fn main() -> ExitCode {
    init_tracing();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    init_error_reports();
    match run(&cli) {
        Ok(outcome) => {
            let out = write_out(&mut std::io::stdout().lock(), &outcome.stdout, "stdout");
            let err = write_out(&mut std::io::stderr().lock(), &outcome.stderr, "stderr");
            match out.and(err) {
                Ok(()) => ExitCode::from(outcome.status),
                Err(code) => code,
            }
        }
        Err(err) => {
            let report = miette::Report::new(err);
            let _ = write_out(
                &mut std::io::stderr().lock(),
                &format!("{report:?}\n"),
                "stderr",
            );
            ExitCode::from(2)
        }
    }
}

/// `--help` and `--version` go to stdout (exit 0, or 1 if it cannot be written); usage
/// errors to stderr with exit 2.
fn clap_exit(e: &clap::Error) -> ExitCode {
    if e.use_stderr() {
        let _ = e.print();
        ExitCode::from(2)
    } else {
        match write_out(
            &mut std::io::stdout().lock(),
            &e.render().to_string(),
            "stdout",
        ) {
            Ok(()) => ExitCode::SUCCESS,
            Err(code) => code,
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

/// Writes `text` to `out` (named `what` in the error). A broken pipe (`hvia config
/// --show | head`) is not an error; any other failure is reported on stderr (when that
/// is not what failed) and becomes exit status 1.
fn write_out(out: &mut impl Write, text: &str, what: &str) -> Result<(), ExitCode> {
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => {
            if what != "stderr" {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "hvia: cannot write to {what}: {e}"
                );
            }
            Err(ExitCode::FAILURE)
        }
    }
}
