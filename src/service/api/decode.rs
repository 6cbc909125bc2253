//! Decoding a function's arguments, the same for every transport: an
//! object (null counts as `{}`), unknown fields refused, a whole number
//! written as a float read as that integer (Convex clients send every
//! number as a float), and an error that never quotes the caller's text.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

use crate::error::{Error, Result};

/// A function without arguments.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// Decodes a function's arguments.
pub fn args<T: DeserializeOwned>(value: Value) -> Result<T> {
    let mut value = if value.is_null() { Value::Object(Default::default()) } else { value };
    if !value.is_object() {
        return Err(Error::invalid("the arguments must be a JSON object"));
    }
    whole_numbers(&mut value);
    serde_json::from_value(value)
        .map_err(|e| Error::invalid(format!("invalid arguments: {}", sanitize(&e.to_string()))))
}

/// Rewrites every float without a fraction (within the i64 range) as an integer.
pub fn whole_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f >= i64::MIN as f64
                && f < i64::MAX as f64
            {
                *n = Number::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(map) => map.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// What went wrong in a serde message, in words of our own: serde quotes the
/// caller's text (an unknown field's name, a refused value), which could be a
/// token or a digest, so nothing of the message is kept but its kind and, for
/// a missing field, the name of one of our own fields.
pub fn sanitize(msg: &str) -> String {
    const KINDS: &[(&str, &str)] = &[
        ("unknown field", "an unknown field was sent"),
        ("duplicate field", "a field was sent twice"),
        ("invalid type", "a value has the wrong type"),
        ("invalid value", "a value is out of range"),
        ("invalid length", "a list or string has the wrong length"),
        ("unknown variant", "a value is not one of the allowed ones"),
        ("EOF while parsing", "the JSON ends too early"),
        ("expected", "the JSON is malformed"),
        ("key must be a string", "the JSON is malformed"),
        ("trailing", "the JSON is malformed"),
        ("control character", "the JSON is malformed"),
        ("invalid escape", "the JSON is malformed"),
        ("invalid number", "the JSON is malformed"),
        ("number out of range", "a number is out of range"),
        ("invalid unicode", "the JSON is malformed"),
        ("lone leading surrogate", "the JSON is malformed"),
        ("recursion limit exceeded", "the JSON nests too deeply"),
        ("cannot parse", "a value has the wrong type"),
    ];
    if let Some(rest) = msg.strip_prefix("missing field `")
        && let Some((name, _)) = rest.split_once('`')
        && is_our_name(name)
    {
        // The name comes from our own types, never from the caller.
        return format!("missing field `{name}`");
    }
    KINDS.iter().find(|(prefix, _)| msg.starts_with(prefix)).map_or("a value is invalid", |(_, kind)| kind).to_string()
}

/// A field name as our types spell them (camelCase identifiers).
fn is_our_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The arguments of a function about one site.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SiteArgs {
    pub site_id: String,
}
