//! The `ecs_compatibility` option: where plugins put the fields they add. Logstash 8 defaults
//! to `v8` (ECS names such as `[host][hostname]`, `[event][original]`); `disabled` gives the
//! legacy top-level names (`host`, `sequence`). `pipeline.ecs_compatibility` sets the default
//! for every plugin of a pipeline.

use sluice_pipeline::{ConfigError, Options};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecs {
    Disabled,
    V1,
    V8,
}

impl Ecs {
    /// The plugin's `ecs_compatibility`, defaulting to `pipeline.ecs_compatibility`, else v8.
    pub fn from_options(opts: &mut Options) -> Result<Ecs, ConfigError> {
        let default = opts.pipeline_ecs_compatibility().unwrap_or("v8").to_owned();
        let mode = opts.choice("ecs_compatibility", &["disabled", "v1", "v8"], &default)?;
        Ok(match mode.as_str() {
            "disabled" => Ecs::Disabled,
            "v1" => Ecs::V1,
            _ => Ecs::V8,
        })
    }

    pub fn enabled(self) -> bool {
        self != Ecs::Disabled
    }
}
