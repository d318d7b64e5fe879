//! sluice-plugins (placeholder)
