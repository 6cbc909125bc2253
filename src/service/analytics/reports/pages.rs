//! Manual pagination (PAGE-01 to PAGE-09): Convex's `paginationOpts` in, exactly
//! `{page, isDone, continueCursor}` out, keyset order on immutable keys, and
//! cursors that are opaque, bound to their call and signed: base64url of the
//! call and the last row's keys plus a 16-byte HMAC-SHA256 tag under a key
//! made once in the database (valid across restarts and processes).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Sha256;
use utoipa::ToSchema;

use crate::error::{Error, Result};

const VERSION: i64 = 1;
const TAG_BYTES: usize = 16;

/// `paginationOpts` (rules PAGE-01 to PAGE-03): `id` and the read budgets
/// are accepted and ignored; `endCursor` only null.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaginationOpts {
    pub num_items: i64,
    pub cursor: Option<String>,
    #[serde(default)]
    pub end_cursor: Option<Value>,
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub maximum_rows_read: Option<Value>,
    #[serde(default)]
    pub maximum_bytes_read: Option<Value>,
}

impl PaginationOpts {
    /// The page size within `1..=max`.
    pub fn check(&self, max: i64) -> Result<usize> {
        if self.end_cursor.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(Error::invalid("paginationOpts.endCursor must be null or absent"));
        }
        if !(1..=max).contains(&self.num_items) {
            return Err(Error::invalid(format!("paginationOpts.numItems must be a whole number 1-{max}")));
        }
        Ok(self.num_items as usize)
    }
}

/// What a cursor is bound to: the function and its arguments but the page.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub function: &'static str,
    pub scope: Value,
}

/// A position: the last row's keys (None = the start).
pub type Position = Option<Vec<Value>>;

fn tag(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(payload);
    mac.finalize().into_bytes()[..TAG_BYTES].to_vec()
}

pub fn encode(key: &[u8], call: &Call, position: &Position) -> String {
    let payload = json!([VERSION, call.function, call.scope, position]).to_string().into_bytes();
    let mut bytes = payload.clone();
    bytes.extend(tag(key, &payload));
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The position a cursor names, when it is this call's and unaltered (rule PAGE-08).
pub fn decode(key: &[u8], call: &Call, cursor: Option<&str>) -> Result<Position> {
    let Some(cursor) = cursor else { return Ok(None) };
    let bad = || Error::invalid("the cursor is not one of this call's");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    if bytes.len() <= TAG_BYTES {
        return Err(bad());
    }
    let (payload, got) = bytes.split_at(bytes.len() - TAG_BYTES);
    use subtle::ConstantTimeEq;
    if !bool::from(tag(key, payload).ct_eq(got)) {
        return Err(bad());
    }
    let v: Value = serde_json::from_slice(payload).map_err(|_| bad())?;
    if v[0] != json!(VERSION) || v[1] != json!(call.function) || v[2] != call.scope {
        return Err(bad());
    }
    match &v[3] {
        Value::Null => Ok(None),
        Value::Array(keys) => Ok(Some(keys.clone())),
        _ => Err(bad()),
    }
}

/// One page of a paginated function, exactly Convex's shape (rule PAGE-04).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub page: Vec<T>,
    pub is_done: bool,
    pub continue_cursor: String,
}

/// Written out because the derived schema of a generic type does not carry
/// its row type's schema along.
impl<T: ToSchema> utoipa::PartialSchema for Page<T> {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::Ref;
        use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
        ObjectBuilder::new()
            .property("page", ArrayBuilder::new().items(Ref::from_schema_name(T::name())))
            .required("page")
            .property("isDone", ObjectBuilder::new().schema_type(Type::Boolean))
            .required("isDone")
            .property(
                "continueCursor",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("The cursor of the next page (of this call only)")),
            )
            .required("continueCursor")
            .into()
    }
}

impl<T: ToSchema> ToSchema for Page<T> {
    fn name() -> std::borrow::Cow<'static, str> {
        format!("PageOf{}", T::name()).into()
    }

    fn schemas(out: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
        out.push((T::name().into_owned(), T::schema()));
        T::schemas(out);
    }
}

/// `{page, isDone, continueCursor}` from `size + 1` fetched rows (rules PAGE-04 to PAGE-06).
pub fn answer<T, R>(
    key: &[u8],
    call: &Call,
    from: Position,
    mut rows: Vec<T>,
    size: usize,
    keys_of: impl Fn(&T) -> Vec<Value>,
    render: impl Fn(&T) -> R,
) -> Page<R> {
    let is_done = rows.len() <= size;
    rows.truncate(size);
    let position = rows.last().map(|r| Some(keys_of(r))).unwrap_or(from);
    Page { page: rows.iter().map(render).collect(), is_done, continue_cursor: encode(key, call, &position) }
}

#[cfg(test)]
mod tests {
    use super::*;

    // rule: PAGE-08
    #[test]
    fn cursors_are_bound_to_their_call_and_signed() {
        let key = [7u8; 32];
        let call = Call { function: "listSessions", scope: json!(["s1", 1, 2]) };
        let c = encode(&key, &call, &Some(vec![json!(5), json!("s_x")]));
        assert_eq!(decode(&key, &call, Some(&c)).unwrap(), Some(vec![json!(5), json!("s_x")]));
        let other = Call { function: "listSessions", scope: json!(["s2", 1, 2]) };
        assert!(decode(&key, &other, Some(&c)).is_err());
        assert!(decode(&[8u8; 32], &call, Some(&c)).is_err());
        let mut bytes = URL_SAFE_NO_PAD.decode(&c).unwrap();
        bytes[3] ^= 1;
        assert!(decode(&key, &call, Some(&URL_SAFE_NO_PAD.encode(bytes))).is_err());
        assert!(decode(&key, &call, Some("!!")).is_err());
        assert_eq!(decode(&key, &call, None).unwrap(), None);
    }

    // rule: PAGE-02
    // rule: PAGE-03
    #[test]
    fn page_sizes_and_end_cursors() {
        let opts = |v: Value| serde_json::from_value::<PaginationOpts>(v);
        assert_eq!(opts(json!({"numItems": 10, "cursor": null})).unwrap().check(100).unwrap(), 10);
        assert!(opts(json!({"numItems": 0, "cursor": null})).unwrap().check(100).is_err());
        assert!(opts(json!({"numItems": 101, "cursor": null})).unwrap().check(100).is_err());
        assert!(opts(json!({"numItems": 5, "cursor": null, "endCursor": "x"})).unwrap().check(100).is_err());
        assert!(
            opts(json!({"numItems": 5, "cursor": null, "id": 3, "maximumRowsRead": 9})).unwrap().check(100).is_ok()
        );
        assert!(opts(json!({"numItems": 5, "cursor": null, "other": 1})).is_err());
    }
}
