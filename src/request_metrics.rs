//! The HTTP request series of this process (count and latency histogram per
//! route pattern, method and status), kept in memory and rendered in the
//! Prometheus text format by `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Default)]
struct Series {
    count: u64,
    sum: f64,
    buckets: [u64; BUCKETS.len()],
}

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), Series>>,
    /// Lead Ads webhook changes: new receipts, repeats, and changes dropped
    /// (Pages linked to no site, other fields). Counts only, never an id.
    leadgen: Mutex<[u64; 3]>,
}

impl Metrics {
    pub fn leadgen(&self, received: u64, duplicates: u64, ignored: u64) {
        let mut c = self.leadgen.lock().unwrap_or_else(|p| p.into_inner());
        c[0] += received;
        c[1] += duplicates;
        c[2] += ignored;
    }

    /// The Lead Ads webhook counters in the Prometheus text format, appended to `out`.
    pub fn render_leadgen(&self, out: &mut String) {
        let c = *self.leadgen.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str("# HELP rastrod_leadgen_changes_total Lead Ads webhook changes by outcome.\n");
        out.push_str("# TYPE rastrod_leadgen_changes_total counter\n");
        for (outcome, n) in [("received", c[0]), ("duplicate", c[1]), ("ignored", c[2])] {
            let _ = writeln!(out, "rastrod_leadgen_changes_total{{outcome=\"{outcome}\"}} {n}");
        }
    }

    pub fn observe(&self, route: &str, method: &str, status: u16, seconds: f64) {
        let mut map = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let s = map.entry((route.to_string(), method.to_string(), status)).or_default();
        s.count += 1;
        s.sum += seconds;
        for (i, b) in BUCKETS.iter().enumerate() {
            if seconds <= *b {
                s.buckets[i] += 1;
            }
        }
    }

    /// The request series in the Prometheus text format, appended to `out`.
    pub fn render_requests(&self, out: &mut String) {
        let map = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str("# HELP rastrod_http_requests_total HTTP requests by route pattern, method and status.\n");
        out.push_str("# TYPE rastrod_http_requests_total counter\n");
        for ((route, method, status), s) in map.iter() {
            let _ = writeln!(
                out,
                "rastrod_http_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}} {}",
                s.count
            );
        }
        out.push_str("# HELP rastrod_http_request_duration_seconds HTTP request latency.\n");
        out.push_str("# TYPE rastrod_http_request_duration_seconds histogram\n");
        for ((route, method, status), s) in map.iter() {
            let labels = format!("route=\"{route}\",method=\"{method}\",status=\"{status}\"");
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "rastrod_http_request_duration_seconds_bucket{{{labels},le=\"{b}\"}} {}",
                    s.buckets[i]
                );
            }
            let _ = writeln!(out, "rastrod_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}", s.count);
            let _ = writeln!(out, "rastrod_http_request_duration_seconds_sum{{{labels}}} {}", s.sum);
            let _ = writeln!(out, "rastrod_http_request_duration_seconds_count{{{labels}}} {}", s.count);
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}
