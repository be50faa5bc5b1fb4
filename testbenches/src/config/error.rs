//! [`ConfigError`]: everything that can be wrong with a configuration, each variant
//! naming the offending input (file and line:column, `--set` argument, key path).
//!
//! The message text alone already carries the location (`file:line:column: key: ...`),
//! so it reads well without a fancy renderer; the miette source code and label add the
//! excerpt when rendered by a report handler.

use miette::{Diagnostic, NamedSource, SourceSpan};
use std::ops::Range;
use std::sync::Arc;
use thiserror::Error;

use super::source::line_col;

/// An error in a configuration: reading, parsing, `--set`, or validation.
#[derive(Debug, Error, Diagnostic)]
pub enum ConfigError {
    /// A config file could not be read.
    #[error("cannot read config file `{path}`: {reason}")]
    #[diagnostic(code(hvia::config::read))]
    Read {
        /// The file's path as given.
        path: String,
        /// The I/O error (in the message, not repeated as a cause).
        reason: std::io::Error,
    },

    /// A TOML file or preset does not parse or does not fit the schema (syntax error,
    /// unknown key, wrong type, missing key).
    #[error("{origin}:{line}:{column}: {message}")]
    #[diagnostic(code(hvia::config::file))]
    File {
        /// The file's name (path or preset file).
        origin: String,
        /// Line of the error, from 1.
        line: usize,
        /// Column of the error in characters, from 1.
        column: usize,
        /// What is wrong, starting with the key path when it is known.
        message: String,
        /// The file's text, for the excerpt.
        #[source_code]
        src: Arc<NamedSource<String>>,
        /// Where in the file.
        #[label("here")]
        span: SourceSpan,
    },

    /// A `--set` argument without `=` or with an empty key.
    #[error("bad --set `{input}`: expected KEY=VALUE, e.g. `pci.system.clock_mhz=66`")]
    #[diagnostic(code(hvia::config::set_syntax))]
    SetSyntax {
        /// The argument as given.
        input: String,
    },

    /// A `--set` key that is not in the configuration.
    #[error("unknown config key `{key}` (in --set `{input}`)")]
    #[diagnostic(code(hvia::config::unknown_key))]
    UnknownKey {
        /// The dotted key path.
        key: String,
        /// The argument as given.
        input: String,
        /// Close or valid keys.
        #[help]
        help: String,
    },

    /// A `--set` key that names a table rather than a value.
    #[error("config key `{key}` is a table, not a value (in --set `{input}`)")]
    #[diagnostic(code(hvia::config::set_table))]
    SetTable {
        /// The dotted key path.
        key: String,
        /// The argument as given.
        input: String,
        /// The keys of that table.
        #[help]
        help: String,
    },

    /// A `--set` value of the wrong type for its key.
    #[error("--set `{input}`: {key}: {message}")]
    #[diagnostic(code(hvia::config::set_value))]
    SetValue {
        /// The argument as given.
        input: String,
        /// The dotted key path.
        key: String,
        /// What is wrong.
        message: String,
        /// The argument, for the excerpt.
        #[source_code]
        src: Arc<NamedSource<String>>,
        /// The value part of the argument.
        #[label("this value")]
        span: SourceSpan,
    },

    /// A value of the right type but out of range or inconsistent with another.
    #[error("{location}{key}: {reason}")]
    #[diagnostic(code(hvia::config::invalid))]
    Invalid {
        /// The dotted key path.
        key: String,
        /// Why the value is not accepted.
        reason: String,
        /// `file:line:column: ` or `--set `...`: ` when the value's origin is known,
        /// else empty.
        location: String,
        /// The text the value came from, when known.
        #[source_code]
        src: Option<Arc<NamedSource<String>>>,
        /// The value in that text.
        #[label("this value")]
        span: Option<SourceSpan>,
    },

    /// A preset name that is not embedded.
    #[error("unknown preset `{name}` (available: {available})")]
    #[diagnostic(code(hvia::config::unknown_preset), help("`hvia presets` lists them"))]
    UnknownPreset {
        /// The name as given.
        name: String,
        /// Comma-separated names of the embedded presets.
        available: String,
    },

    /// A `calibrated:` comment of the configuration is malformed (no target, no range).
    #[error("{message}")]
    #[diagnostic(code(hvia::config::calibrated))]
    Calibrated {
        /// Where and what.
        message: String,
    },

    /// The configuration could not be written as TOML (a value TOML cannot hold).
    #[error("cannot write the configuration as TOML: {message}")]
    #[diagnostic(code(hvia::config::serialize))]
    Serialize {
        /// What went wrong.
        message: String,
    },
}

impl ConfigError {
    /// A [`ConfigError::File`] for `message` at byte range `span` of `text` (from `origin`).
    pub(crate) fn in_file(origin: &str, text: &str, span: Range<usize>, message: String) -> Self {
        let pos = line_col(text, span.start);
        let start = span.start.min(text.len());
        let len = span.end.min(text.len()).saturating_sub(start);
        ConfigError::File {
            origin: origin.to_owned(),
            line: pos.line,
            column: pos.column,
            message,
            src: Arc::new(NamedSource::new(origin, text.to_owned())),
            span: (start, len).into(),
        }
    }

    /// `text` named `name`, as the excerpt of an error.
    pub(crate) fn source_code(name: &str, text: &str) -> Arc<NamedSource<String>> {
        Arc::new(NamedSource::new(name, text.to_owned()))
    }

    /// The dotted key path this error is about, when it is about one key.
    #[must_use]
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key, .. }
            | ConfigError::SetTable { key, .. }
            | ConfigError::SetValue { key, .. }
            | ConfigError::Invalid { key, .. } => Some(key),
            _ => None,
        }
    }
}
