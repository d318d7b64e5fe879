//! Field names in plugin options: parsed once when constant, rendered per event when they
//! hold sprintf references (`%{[type]}_count`).

use std::borrow::Cow;

use sluice_event::{Event, FieldRef, Template};
use sluice_pipeline::{ConfigError, Options};

#[derive(Debug, Clone)]
pub enum FieldName {
    Fixed(FieldRef),
    Dynamic(Template),
}

impl FieldName {
    /// Parses an option's field name; a malformed constant reference is a config error.
    pub fn parse(opts: &Options, option: &str, text: &str) -> Result<FieldName, ConfigError> {
        let t = Template::parse(text);
        if t.is_constant() {
            FieldRef::parse(text)
                .map(FieldName::Fixed)
                .map_err(|e| opts.error(option, e.to_string()))
        } else {
            Ok(FieldName::Dynamic(t))
        }
    }

    /// The reference for this event (`None` if a rendered name is not a valid reference).
    pub fn resolve(&self, e: &Event) -> Option<Cow<'_, FieldRef>> {
        match self {
            FieldName::Fixed(r) => Some(Cow::Borrowed(r)),
            FieldName::Dynamic(t) => FieldRef::parse(&t.render(e)).ok().map(Cow::Owned),
        }
    }
}

/// A list option of field references (`fields => ["a", "[b][c]"]`); a malformed one is a
/// config error naming the option.
pub fn references(opts: &mut Options, option: &str) -> Result<Option<Vec<FieldRef>>, ConfigError> {
    let Some(list) = opts.string_list(option)? else {
        return Ok(None);
    };
    list.iter()
        .map(|f| FieldRef::parse(f).map_err(|e| opts.error(option, e.to_string())))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
