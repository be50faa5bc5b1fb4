//! [`LayoutError`]: bad input to `hvia layout`, naming the option (or config key) it came
//! from, with the offending value as the excerpt and, when known, the exact spot in it.

use miette::{Diagnostic, NamedSource, SourceSpan};
use std::ops::Range;
use std::sync::Arc;
use thiserror::Error;

/// Input to `hvia layout` that cannot be turned into a layout: malformed hex, a buffer too
/// short for a descriptor, a page list that does not fit the region, and so on. The
/// message starts with the option (`--decode`, `--pages`, ...) so it reads well without a
/// fancy renderer; the binary exits with status 2.
#[derive(Debug, Error, Diagnostic)]
#[error("{option}: {message}")]
#[diagnostic(code(hvia::layout::input))]
pub struct LayoutError {
    /// The option or config key the bad input came from, e.g. `--decode`.
    pub option: &'static str,
    /// What is wrong with it.
    pub message: String,
    /// The option's value as given, for the excerpt.
    #[source_code]
    src: Arc<NamedSource<String>>,
    /// The part of the value that is wrong, when one part is.
    #[label("here")]
    span: Option<SourceSpan>,
    /// How to fix it, when there is something to say.
    #[help]
    help: Option<String>,
}

impl LayoutError {
    /// An error about `option`, whose value was `value`.
    pub(crate) fn new(option: &'static str, value: &str, message: impl Into<String>) -> Self {
        LayoutError {
            option,
            message: message.into(),
            src: Arc::new(NamedSource::new(option, value.to_owned())),
            span: None,
            help: None,
        }
    }

    /// The same error pointing at byte range `range` of the value (clamped to it).
    #[must_use]
    pub(crate) fn at(mut self, range: Range<usize>) -> Self {
        let len = self.src.inner().len();
        let start = range.start.min(len);
        let end = range.end.clamp(start, len);
        self.span = Some((start, end - start).into());
        self
    }

    /// The same error with a hint on how to fix it.
    #[must_use]
    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The byte range of the value the error points at, if any.
    #[must_use]
    pub fn span(&self) -> Option<Range<usize>> {
        self.span.map(|s| s.offset()..s.offset() + s.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_the_option_and_spans_clamp() {
        let e = LayoutError::new("--decode", "0xzz", "bad").at(2..99);
        assert_eq!(e.to_string(), "--decode: bad");
        assert_eq!(e.span(), Some(2..4));
        let e = LayoutError::new("--len", "", "zero").at(5..9);
        assert_eq!(e.span(), Some(0..0));
        assert!(e.help.is_none());
    }
}
