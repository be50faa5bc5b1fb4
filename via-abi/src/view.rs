//! The boilerplate every byte view shares (smoltcp `wire` style), written once as a macro.
//!
//! `view_basics!(Name)` gives a view `Name<T: AsRef<[u8]>> { buffer: T }` its
//! `new_unchecked`, `new_checked`, `into_inner` and `as_bytes`; the view itself supplies
//! `check_len`. `view_basics!(Name, fixed LEN, "layout name")` also supplies a `check_len`
//! that requires exactly the fixed layout length (longer buffers are accepted).

/// Generates the constructors and buffer accessors of a byte view; see the module docs.
macro_rules! view_basics {
    ($name:ident) => {
        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps a buffer without checking its length. Accessors never panic: on a short
            /// buffer missing bytes read as zero and writes to them are dropped.
            pub fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wraps a buffer after [`Self::check_len`] accepted it.
            pub fn new_checked(buffer: T) -> Result<Self, crate::Error> {
                let view = Self::new_unchecked(buffer);
                view.check_len()?;
                Ok(view)
            }

            /// Returns the wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// The wrapped bytes.
            pub fn as_bytes(&self) -> &[u8] {
                self.buffer.as_ref()
            }
        }
    };
    ($name:ident, fixed $len:expr, $layout:expr) => {
        view_basics!($name);

        impl<T: AsRef<[u8]>> $name<T> {
            /// Returns [`crate::Error::Truncated`] unless the buffer holds the whole layout.
            pub fn check_len(&self) -> Result<(), crate::Error> {
                crate::require_len($layout, $len, self.buffer.as_ref().len())
            }
        }
    };
}
