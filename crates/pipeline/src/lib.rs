//! sluice-pipeline (placeholder)
