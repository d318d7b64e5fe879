//! `aggregate`: refused with a clear error. Its `code` (and `timeout_code`) is Ruby, run
//! against each event and a map per task; sluice runs Ruby once its ruby filter exists
//! (the same embedded runtime will serve aggregate).

use sluice_pipeline::{ConfigError, Filter, Options};

pub fn build(opts: &mut Options) -> Result<Box<dyn Filter>, ConfigError> {
    Err(opts.plugin_error(
        "the aggregate filter runs Ruby code (`code`, `timeout_code`) for each event; sluice cannot run Ruby yet (it will with the ruby filter)",
    ))
}
