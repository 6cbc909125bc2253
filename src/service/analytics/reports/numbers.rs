//! How the reports write their figures (rule ARPT-08): rates to 4 decimals
//! and per-session figures to 2, half up, computed in integers and written
//! as the shortest JSON number (`1`, not `1.0`); averages in whole ms; null
//! where the denominator is zero.

use serde::{Serialize, Serializer};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

/// A figure kept as an integer count of `1/scale`: exact, and written as the
/// shortest JSON number (`0.3333`, `1`), never `1.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed {
    scaled: i64,
    scale: i64,
}

impl Fixed {
    /// `scaled / scale`, exactly.
    pub fn of(scaled: i64, scale: i64) -> Fixed {
        Fixed { scaled, scale }
    }

    pub fn as_f64(self) -> f64 {
        self.scaled as f64 / self.scale as f64
    }
}

impl Serialize for Fixed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.scaled % self.scale == 0 {
            s.serialize_i64(self.scaled / self.scale)
        } else {
            s.serialize_f64(self.as_f64())
        }
    }
}

impl utoipa::PartialSchema for Fixed {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Number)
            .description(Some("A decimal figure, rounded half up (rates to 4 places, per-session figures to 2)"))
            .into()
    }
}

impl utoipa::ToSchema for Fixed {}

/// A rate n/d to 4 decimals, half up, in integers (rule ARPT-08); null when d = 0.
pub fn rate(n: i64, d: i64) -> Option<Fixed> {
    (d != 0).then(|| Fixed { scaled: (20_000 * n + d).div_euclid(2 * d), scale: 10_000 })
}

/// An average in ms, half up; null when n = 0.
pub fn avg_ms(sum: i64, n: i64) -> Option<i64> {
    (n != 0).then(|| (2 * sum + n).div_euclid(2 * n))
}

/// `viewsPerSession`: 2 decimals, half up; null with no sessions.
pub fn per_session(n: i64, d: i64) -> Option<Fixed> {
    (d != 0).then(|| Fixed { scaled: (200 * n + d).div_euclid(2 * d), scale: 100 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text<T: Serialize>(v: T) -> String {
        serde_json::to_string(&v).unwrap()
    }

    // rule: ARPT-08
    #[test]
    fn rounding_is_half_up_in_integers() {
        assert_eq!(text(rate(1, 3)), "0.3333");
        assert_eq!(text(rate(2, 3)), "0.6667");
        assert_eq!(text(rate(1, 8)), "0.125");
        assert_eq!(text(rate(1, 0)), "null");
        assert_eq!(avg_ms(5, 2), Some(3));
        assert_eq!(avg_ms(4, 3), Some(1));
        assert_eq!(avg_ms(1, 0), None);
        assert_eq!(text(per_session(5, 3)), "1.67");
        assert_eq!(text(per_session(1, 0)), "null");
        // The shortest JSON number: 1, not 1.0.
        assert_eq!(text(rate(3, 3)), "1");
        assert_eq!(text(per_session(4, 2)), "2");
        assert_eq!(text(rate(0, 3)), "0");
        assert_eq!(serde_json::to_value(rate(1, 3)).unwrap(), json!(0.3333));
    }
}
