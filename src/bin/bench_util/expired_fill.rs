//! `loadgen events --expired N`: before the daemon starts, the site `loja` gets
//! N events 100 days old and a retention policy keeping events 30 days, so the
//! retention actor deletes them while the measured phases run. A template of
//! 10,000 events goes in through the import (real sessions and rows); it is
//! then copied in SQL (fresh ids) until N rows: what the deletion walks is
//! the same table and indexes the tracker fills.

use std::sync::Arc;
use std::time::Instant;

use rastrod::clock::{DAY_MS, SystemClock};
use rastrod::db::{AnyConnection, Db};
use rastrod::service::analytics::{ingest::import, retention};
use rastrod::service::context::Context;
use rastrod::service::sites::{self, CreateSite};

use super::AnyResult;

pub const SITE_BODY: &str = r#"{"siteId":"loja","name":"Loja","currency":"BRL","timezone":"America/Sao_Paulo","ownerId":"loadgen","domains":["loja.example.com"]}"#;

/// The cutoff the policy gives: events before it are expired.
pub fn cutoff(now: i64) -> i64 {
    now - 30 * DAY_MS
}

fn copy_round(c: &mut AnyConnection, round: usize, limit: i64) -> rastrod::error::Result<usize> {
    use diesel::RunQueryDsl;
    let sql = format!(
        "INSERT INTO web_events (id, site_id, session_id, visitor_id, kind, name, path, route, occurred_at, pageview_id, \
         properties, engaged_ms, lcp, inp, cls, fcp, ttfb) \
         SELECT id || '_{round}', site_id, session_id, visitor_id, kind, name, path, route, occurred_at, \
         pageview_id || '_{round}', properties, engaged_ms, lcp, inp, cls, fcp, ttfb \
         FROM web_events WHERE site_id = 'loja' ORDER BY id LIMIT {limit}"
    );
    Ok(diesel::sql_query(sql).execute(c)?)
}

/// Fills `n` expired events and the policy; prints how long it took.
pub fn fill(url: &str, n: usize) -> AnyResult<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let start = Instant::now();
        let db = Db::open(url, 2, 64, 10_000)?;
        let env = std::collections::BTreeMap::new();
        let config = rastrod::config::Config::load_from(None, &env)?;
        let clock: rastrod::clock::SharedClock = Arc::new(SystemClock);
        let now = clock.now_ms();
        let cx = Context::new(db, clock, Arc::new(config), "http://127.0.0.1:9")?;
        let input: CreateSite = serde_json::from_str(SITE_BODY)?;
        cx.write_plain(move |c| sites::create(c, now, input)).await?;
        let day = now - 100 * DAY_MS;
        let lines: Vec<String> = (0..10_000usize.min(n))
            .map(|i| {
                let t = day + (i as i64 / 10) * 60_000 + (i as i64 % 10) * 5_000;
                format!(
                    r#"{{"type":"pageview","occurredAt":{t},"visitorId":"v_old{:08}","pageviewId":"p_old{i:013}","path":"/p/{}"}}"#,
                    i / 10,
                    i % 7
                )
            })
            .collect();
        for (k, chunk) in lines.chunks(import::MAX_LINES).enumerate() {
            import::import(&cx, "loja", &format!("expired-{k}"), chunk.join("\n").as_bytes(), true).await?;
        }
        rastrod::actors::report::drain(&cx).await?;
        let mut have = lines.len();
        let mut round = 0;
        while have < n {
            round += 1;
            let limit = (n - have).min(have) as i64;
            have += cx.write_plain(move |c| copy_round(c, round, limit)).await?;
        }
        let policy = retention::SetPolicy {
            site_id: "loja".into(),
            events_days: 30,
            sessions_days: retention::MAX_DAYS,
            conversions_days: retention::MAX_DAYS,
            profiles_days: retention::MAX_DAYS,
            aggregates_days: retention::MAX_DAYS,
        };
        cx.write_plain(move |c| retention::set_policy(c, now, policy)).await?;
        cx.close();
        println!("expired: {have} events 100 days old on loja, policy events 30 days, in {:.1} s", start.elapsed().as_secs_f64());
        Ok(())
    })
}

/// Events of `loja` still past the cutoff.
pub async fn left(db: &Db, cutoff: i64) -> AnyResult<i64> {
    Ok(db
        .run(move |c| {
            Ok(rastrod::store::analytics::retention::count_before(c, "web_events", "occurred_at", "loja", cutoff)?)
        })
        .await?)
}
