//! Meta's usage headers, read on every answer (success and error alike).

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

/// Above this percentage of any quota the caller should back off (the sync waits an hour).
pub const HIGH_USAGE_PCT: f64 = 75.0;

/// How close the app, the ad account and the business are to Meta's rate limits.
///
/// `max_pct` is the highest percentage found in `X-App-Usage`, `X-Ad-Account-Usage`,
/// `X-Business-Use-Case-Usage` (and `X-FB-Ads-Insights-Throttle`, which insights answers
/// carry); `None` when no header was there. `regain_after` is the longest wait Meta asked for:
/// `estimated_time_to_regain_access` (minutes) of the business use cases, or the ad account's
/// `reset_time_duration` (seconds) when positive.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub max_pct: Option<f64>,
    pub regain_after: Option<Duration>,
}

impl Usage {
    /// Reads the usage headers of one answer. Unparseable headers are ignored.
    pub fn from_headers(headers: &HeaderMap) -> Usage {
        let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        Usage::from_values(
            get("x-app-usage"),
            get("x-ad-account-usage"),
            get("x-business-use-case-usage"),
            get("x-fb-ads-insights-throttle"),
        )
    }

    /// The same from the raw header values (JSON text each).
    pub fn from_values(
        app: Option<&str>,
        ad_account: Option<&str>,
        business: Option<&str>,
        insights: Option<&str>,
    ) -> Usage {
        let mut u = Usage::default();
        if let Some(v) = app.and_then(parse) {
            for key in ["call_count", "total_time", "total_cputime"] {
                u.pct(v.get(key));
            }
        }
        if let Some(v) = ad_account.and_then(parse) {
            u.pct(v.get("acc_id_util_pct"));
            if let Some(secs) = num(v.get("reset_time_duration")).filter(|s| *s > 0.0) {
                u.regain(secs);
            }
        }
        if let Some(Value::Object(by_business)) = business.and_then(parse) {
            for entries in by_business.values() {
                let Value::Array(entries) = entries else { continue };
                for e in entries {
                    for key in ["call_count", "total_time", "total_cputime"] {
                        u.pct(e.get(key));
                    }
                    if let Some(minutes) = num(e.get("estimated_time_to_regain_access")).filter(|m| *m > 0.0) {
                        u.regain(minutes * 60.0);
                    }
                }
            }
        }
        if let Some(v) = insights.and_then(parse) {
            u.pct(v.get("app_id_util_pct"));
            u.pct(v.get("acc_id_util_pct"));
        }
        u
    }

    /// Whether any quota is past [`HIGH_USAGE_PCT`] (or Meta asked for a wait).
    pub fn is_high(&self) -> bool {
        self.max_pct.is_some_and(|p| p > HIGH_USAGE_PCT) || self.regain_after.is_some()
    }

    /// The worst of both (used across the pages of one read).
    pub fn merge(self, other: Usage) -> Usage {
        Usage {
            max_pct: max_opt(self.max_pct, other.max_pct, f64::max),
            regain_after: max_opt(self.regain_after, other.regain_after, Duration::max),
        }
    }

    fn pct(&mut self, v: Option<&Value>) {
        if let Some(p) = num(v) {
            self.max_pct = Some(self.max_pct.map_or(p, |m| m.max(p)));
        }
    }

    fn regain(&mut self, secs: f64) {
        let d = Duration::from_secs_f64(secs.min(1e9));
        self.regain_after = Some(self.regain_after.map_or(d, |m| m.max(d)));
    }
}

fn max_opt<T>(a: Option<T>, b: Option<T>, max: impl Fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(max(a, b)),
        (a, b) => a.or(b),
    }
}

fn parse(s: &str) -> Option<Value> {
    serde_json::from_str(s).ok()
}

/// A finite, non-negative number, given as a JSON number or a numeric string.
fn num(v: Option<&Value>) -> Option<f64> {
    let n = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    (n.is_finite() && n >= 0.0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_headers_is_unknown() {
        let u = Usage::from_headers(&HeaderMap::new());
        assert_eq!(u, Usage::default());
        assert!(!u.is_high());
    }

    #[test]
    fn max_over_all_three() {
        let u = Usage::from_values(
            Some(r#"{"call_count":28,"total_time":25,"total_cputime":25}"#),
            Some(r#"{"acc_id_util_pct":9.67,"reset_time_duration":0,"ads_api_access_tier":"standard_access"}"#),
            Some(
                r#"{"123":[{"type":"ads_insights","call_count":95,"total_cputime":20,"total_time":20,"estimated_time_to_regain_access":30}],
                   "456":[{"type":"ads_management","call_count":5,"estimated_time_to_regain_access":2}]}"#,
            ),
            None,
        );
        assert_eq!(u.max_pct, Some(95.0));
        assert_eq!(u.regain_after, Some(Duration::from_secs(30 * 60)));
        assert!(u.is_high());
    }

    #[test]
    fn app_usage_alone_and_garbage() {
        let u =
            Usage::from_values(Some(r#"{"call_count":"12","total_time":80.5}"#), Some("not json"), Some("[]"), None);
        assert_eq!(u.max_pct, Some(80.5));
        assert_eq!(u.regain_after, None);
        assert!(u.is_high());
        let low = Usage::from_values(Some(r#"{"call_count":75}"#), None, None, None);
        assert!(!low.is_high());
    }

    #[test]
    fn ad_account_reset_and_insights_throttle() {
        let u = Usage::from_values(
            None,
            Some(r#"{"acc_id_util_pct":10,"reset_time_duration":90}"#),
            None,
            Some(r#"{"app_id_util_pct":3,"acc_id_util_pct":41}"#),
        );
        assert_eq!(u.max_pct, Some(41.0));
        assert_eq!(u.regain_after, Some(Duration::from_secs(90)));
    }

    #[test]
    fn merge_keeps_the_worst() {
        let a = Usage { max_pct: Some(10.0), regain_after: None };
        let b = Usage { max_pct: Some(5.0), regain_after: Some(Duration::from_secs(60)) };
        assert_eq!(a.merge(b), Usage { max_pct: Some(10.0), regain_after: Some(Duration::from_secs(60)) });
        assert_eq!(Usage::default().merge(Usage::default()), Usage::default());
    }
}
