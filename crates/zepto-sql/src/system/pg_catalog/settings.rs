//! The server settings clients read (`pg_settings`, `current_setting`).

use crate::system::{text, CatalogContext};
use zepto_storage::Value;

/// The value of setting `name` (any case), as `pg_settings` shows it.
pub fn setting(name: &str) -> Option<&'static str> {
    SETTINGS.iter().find(|s| s.0.eq_ignore_ascii_case(name)).map(|s| s.1)
}

/// The server settings clients read at connect (their values as the door's startup reports):
/// name, value, category, description, context, type.
#[allow(clippy::type_complexity)]
static SETTINGS: &[(&str, &str, &str, &str, &str, &str)] = &[
    (
        "default_table_access_method",
        "heap",
        "Client Connection Defaults",
        "Sets the default table access method for new tables.",
        "user",
        "string",
    ),
    ("server_version", "16.0", "Preset Options", "Shows the server version.", "internal", "string"),
    (
        "server_version_num",
        "160000",
        "Preset Options",
        "Shows the server version as an integer.",
        "internal",
        "integer",
    ),
    ("server_encoding", "UTF8", "Preset Options", "Shows the server character set encoding.", "internal", "string"),
    (
        "client_encoding",
        "UTF8",
        "Client Connection Defaults",
        "Sets the client's character set encoding.",
        "user",
        "string",
    ),
    (
        "DateStyle",
        "ISO, MDY",
        "Client Connection Defaults",
        "Sets the display format for date and time values.",
        "user",
        "string",
    ),
    (
        "TimeZone",
        "UTC",
        "Client Connection Defaults",
        "Sets the time zone for displaying and interpreting time stamps.",
        "user",
        "string",
    ),
    (
        "standard_conforming_strings",
        "on",
        "Version and Platform Compatibility",
        "Causes '...' strings to treat backslashes literally.",
        "user",
        "bool",
    ),
    ("integer_datetimes", "on", "Preset Options", "Shows whether datetimes are integer based.", "internal", "bool"),
    (
        "search_path",
        "\"$user\", public",
        "Client Connection Defaults",
        "Sets the schema search order for names that are not schema-qualified.",
        "user",
        "string",
    ),
    ("max_identifier_length", "63", "Preset Options", "Shows the maximum identifier length.", "internal", "integer"),
];

pub(super) fn pg_settings(_: &CatalogContext) -> Vec<Vec<Value>> {
    SETTINGS
        .iter()
        .map(|(name, value, category, desc, context, kind)| {
            vec![
                text(name),
                text(value),
                Value::Null,
                text(category),
                text(desc),
                text(context),
                text(kind),
                text("default"),
                text(value),
                text(value),
            ]
        })
        .collect()
}
