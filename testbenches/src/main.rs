//! The `hvia` command.
fn main() {}
