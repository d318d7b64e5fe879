//! sluice-queue (placeholder)
