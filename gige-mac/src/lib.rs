//! gige-mac (placeholder, filled in by its issue).
