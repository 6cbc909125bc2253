//! `GET /dashboard/api/live/stream?siteIds=a,b`: the chosen clients' live
//! visitors pushed as Server-Sent Events (`event: live`, `id`, `data` one
//! site's state as `liveVisitors` answers it, with its `siteId`), each time a
//! tracker commit changes them (at most once a second per site), from the
//! states the process reads once for every open dashboard (`live_push`, `live_publisher`). A
//! reconnecting browser sends `Last-Event-ID` and gets only newer states; a
//! comment line every 15 seconds keeps proxies from closing a quiet stream.

use std::collections::HashMap;
use std::time::Duration;

use actix_web::http::header;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::reads::operator;
use super::session::signed_in;
use crate::error::Result;
use crate::http::paged_body::PagedBody;
use crate::service::analytics::reports::live_publisher;
use crate::service::{sites, validate};
use crate::state::AppState;

/// Most clients one stream watches.
pub const MAX_STREAM_SITES: usize = 50;
const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StreamQuery {
    /// The clients, comma-separated.
    site_ids: String,
}

pub async fn live_stream(
    st: web::Data<AppState>,
    req: HttpRequest,
    q: web::Query<StreamQuery>,
) -> Result<HttpResponse> {
    let session = signed_in(&req)?;
    let ids: Vec<String> = q.site_ids.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
    validate::site_ids_up_to(&ids, MAX_STREAM_SITES)?;
    operator(&session, &ids).check_sites(&ids)?;
    let known = ids.clone();
    st.cx.read(move |c| sites::require_many(c, &known).map(|_| ())).await?;
    // The last state the browser saw: each site's newer ones only.
    let last: u64 = req
        .headers()
        .get("Last-Event-ID")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut watcher = live_publisher::watch(&st.cx, &ids);
    let (tx, body) = PagedBody::new(4);
    actix_web::rt::spawn(async move {
        let mut seen: HashMap<String, u64> = ids.iter().map(|id| (id.clone(), last)).collect();
        if tx.send(Ok(Bytes::from_static(b"retry: 3000\n\n"))).await.is_err() {
            return;
        }
        loop {
            for update in watcher.newer(&mut seen) {
                let event = format!("event: live\nid: {}\ndata: {}\n\n", update.id, update.json);
                if tx.send(Ok(Bytes::from(event))).await.is_err() {
                    return;
                }
            }
            match tokio::time::timeout(KEEP_ALIVE, watcher.changed()).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(_) => {
                    if tx.send(Ok(Bytes::from_static(b": still here\n\n"))).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body))
}
