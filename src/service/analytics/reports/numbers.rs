//! How the reports write their figures (rule ARPT-08): rates to 4 decimals
//! and per-session figures to 2, half up, computed in integers and written
//! as the shortest JSON number (`1`, not `1.0`); averages in whole ms; null
//! where the denominator is zero.

use serde_json::{Value, json};

/// A rate n/d to 4 decimals, half up, in integers (rule ARPT-08); null when d = 0.
pub fn rate(n: i64, d: i64) -> Value {
    if d == 0 {
        return Value::Null;
    }
    let q = (20_000 * n + d).div_euclid(2 * d);
    shortest(q, 10_000)
}

/// `q / scale` as the shortest JSON number: `1`, not `1.0` (ARPT-08).
fn shortest(q: i64, scale: i64) -> Value {
    if q % scale == 0 { json!(q / scale) } else { json!(q as f64 / scale as f64) }
}

/// An average in ms, half up; null when n = 0.
pub fn avg_ms(sum: i64, n: i64) -> Value {
    if n == 0 { Value::Null } else { json!((2 * sum + n).div_euclid(2 * n)) }
}

/// `viewsPerSession`: 2 decimals, half up; null with no sessions.
pub fn per_session(n: i64, d: i64) -> Value {
    if d == 0 {
        return Value::Null;
    }
    shortest((200 * n + d).div_euclid(2 * d), 100)
}
