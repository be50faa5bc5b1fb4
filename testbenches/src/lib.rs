//! testbenches (placeholder).
