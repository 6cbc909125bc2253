//! Prometheus text metrics: requests and latency by route and status, the
//! database pool, the group-commit writer and the SQL statements run. Labels
//! are route patterns (`/v1/sites/{siteId}`), never concrete paths, so no id or
//! secret can reach a metric and the series stay bounded.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};

use super::AppState;

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
}

impl Metrics {
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

    pub fn render(&self, st: &AppState) -> String {
        let mut out = String::new();
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
        drop(map);
        let (connections, idle) = st.cx.db.pool_state();
        let w = st.cx.db.writer_stats();
        let _ = write!(
            out,
            "# HELP rastrod_db_pool_connections Open read connections.\n# TYPE rastrod_db_pool_connections gauge\n\
             rastrod_db_pool_connections {connections}\n\
             # HELP rastrod_db_pool_idle_connections Idle read connections.\n# TYPE rastrod_db_pool_idle_connections gauge\n\
             rastrod_db_pool_idle_connections {idle}\n\
             # HELP rastrod_db_pool_in_use_connections Read connections in use.\n# TYPE rastrod_db_pool_in_use_connections gauge\n\
             rastrod_db_pool_in_use_connections {}\n\
             # HELP rastrod_db_pool_max_connections Pool size.\n# TYPE rastrod_db_pool_max_connections gauge\n\
             rastrod_db_pool_max_connections {}\n\
             # HELP rastrod_db_write_batches_total Transactions committed by the group-commit writer.\n\
             # TYPE rastrod_db_write_batches_total counter\nrastrod_db_write_batches_total {}\n\
             # HELP rastrod_db_writes_total Writes run by the group-commit writer.\n\
             # TYPE rastrod_db_writes_total counter\nrastrod_db_writes_total {}\n\
             # HELP rastrod_db_write_batches_failed_total Writer transactions that failed as a whole.\n\
             # TYPE rastrod_db_write_batches_failed_total counter\nrastrod_db_write_batches_failed_total {}\n\
             # HELP rastrod_db_writes_pending Writes queued or running, not yet answered.\n\
             # TYPE rastrod_db_writes_pending gauge\nrastrod_db_writes_pending {}\n\
             # HELP rastrod_db_queries_total SQL statements finished on every database connection (pool, writer, checkpointer).\n\
             # TYPE rastrod_db_queries_total counter\nrastrod_db_queries_total {}\n",
            connections.saturating_sub(idle),
            st.cx.db.pool_max(),
            w.batches,
            w.writes,
            w.failed_batches,
            w.pending,
            st.cx.db.queries(),
        );
        out
    }
}

/// Middleware: times every request and counts it under its route pattern.
pub async fn track(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let start = Instant::now();
    let route = req.match_pattern().unwrap_or_else(|| "unmatched".to_string());
    let method = req.method().as_str().to_string();
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let res = next.call(req).await;
    let status = match &res {
        Ok(r) => r.status().as_u16(),
        Err(e) => e.as_response_error().status_code().as_u16(),
    };
    if let Some(st) = state {
        st.metrics.observe(&route, &method, status, start.elapsed().as_secs_f64());
    }
    res
}

pub async fn metrics_route(st: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(st.metrics.render(&st))
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}
