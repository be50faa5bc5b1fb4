//! nic-model (placeholder, filled in by its issue).
