//! Prometheus text metrics: requests and latency by route and status, the
//! database pool, the group-commit writer and the SQL statements run. Labels
//! are route patterns (`/v1/sites/{siteId}`), never concrete paths, so no id or
//! secret can reach a metric and the series stay bounded.

use std::fmt::Write;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};

use super::AppState;

/// `/metrics`: the request series, then the database's figures.
fn render(st: &AppState) -> String {
    let mut out = String::new();
    st.metrics.render_requests(&mut out);
    st.metrics.render_leadgen(&mut out);
    let storage = st.cx.storage_stats();
    let (connections, idle, w) = (storage.connections, storage.idle, storage.writer);
    let sessions = st.cx.analytics.tracker.session_figures();
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
         # TYPE rastrod_db_queries_total counter\nrastrod_db_queries_total {}\n\
         # HELP rastrod_live_states_read_total Sites' live states read for the dashboards' live push.\n\
         # TYPE rastrod_live_states_read_total counter\nrastrod_live_states_read_total {}\n\
         # HELP rastrod_tracker_sessions_total Tracker batches by where their visitor's current session came from.\n\
         # TYPE rastrod_tracker_sessions_total counter\n\
         rastrod_tracker_sessions_total{{source=\"memory\"}} {}\nrastrod_tracker_sessions_total{{source=\"read\"}} {}\n",
        connections.saturating_sub(idle),
        storage.pool_max,
        w.batches,
        w.writes,
        w.failed_batches,
        w.pending,
        storage.queries,
        st.cx.analytics.push.reads(),
        sessions.0,
        sessions.1,
    );
    out
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
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(render(&st))
}
