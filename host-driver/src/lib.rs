//! host-driver (placeholder, filled in by its issue).
