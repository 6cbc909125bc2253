//! The JSON body extractor of every host and dashboard route: a JSON content
//! type (else 415), the body under the size limit (413) and the deadline
//! (408), then our decoding, in which a whole number written with a fraction
//! (`10.0`, `1e3`) counts as that integer. JSON has one number
//! type; JavaScript clients (Convex among them) send floats, and the OpenAPI
//! document's `integer` admits `1.0`, so refusing it would refuse schema-valid
//! requests.

use std::ops::Deref;

use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use futures_core::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Error;
use crate::service::api::decode::whole_numbers;

pub struct Json<T>(pub T);

impl<T> Json<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Json<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let json = super::body::is_json(req.headers());
        let limit =
            req.app_data::<web::Data<crate::state::AppState>>().map_or(256 * 1024, |st| st.cx.config.body_limit_bytes);
        let body = web::Payload::from_request(req, payload);
        Box::pin(async move {
            if !json {
                return Err(super::body::unsupported_media_type().into());
            }
            let body = body.await?;
            let bytes = super::body::read(body, limit).await?;
            decode_bytes(&bytes).map(Json).map_err(Into::into)
        })
    }
}

/// Decodes a JSON body into `T`: as sent, or, when only a type failed, with
/// whole floats read as integers. The message names the kind of failure and
/// its line and column, never the caller's text.
pub fn decode_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    let first = match serde_json::from_slice::<T>(bytes) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if first.classify() == serde_json::error::Category::Data
        && let Ok(mut value) = serde_json::from_slice::<Value>(bytes)
    {
        whole_numbers(&mut value);
        if let Ok(v) = T::deserialize(&value) {
            return Ok(v);
        }
    }
    Err(Error::invalid(format!("invalid JSON body: {}", super::errors::json_detail(&first))))
}

/// Decodes a JSON value into `T`, whole floats read as integers; the message
/// names the kind of failure, never the caller's text.
pub fn decode<T: DeserializeOwned>(mut value: Value) -> Result<T, Error> {
    whole_numbers(&mut value);
    T::deserialize(&value)
        .map_err(|e| Error::invalid(format!("invalid JSON body: {}", super::errors::sanitize(&e.to_string()))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Args {
        n: i64,
        f: Option<f64>,
        list: Vec<u32>,
    }

    #[test]
    fn whole_floats_are_integers_and_fractions_stay_refused() {
        let ok: Args = decode(serde_json::json!({"n": 10.0, "f": 1.5, "list": [1.0, 2e0]})).unwrap();
        assert_eq!(ok, Args { n: 10, f: Some(1.5), list: vec![1, 2] });
        let err = decode::<Args>(serde_json::json!({"n": 1.5, "list": []})).unwrap_err();
        assert_eq!(err.message, "invalid JSON body: a value has the wrong type");
        let unknown = decode::<Args>(serde_json::json!({"n": 1, "list": [], "secret_token_abc": 1})).unwrap_err();
        assert!(!unknown.message.contains("secret_token_abc"), "{}", unknown.message);
        let bytes = br#"{"n": 2.0, "list": [3.0]}"#;
        assert_eq!(decode_bytes::<Args>(bytes).unwrap(), Args { n: 2, f: None, list: vec![3] });
        let e = decode_bytes::<Args>(br#"{"n": 1, "list": [], "tok_secret": 1}"#).unwrap_err();
        assert_eq!(e.message, "invalid JSON body: an unknown field was sent at line 1 column 33");
    }
}
