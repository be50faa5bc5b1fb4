//! pci-model (placeholder, filled in by its issue).
