//! events: the tracker's ingestion.

#[allow(unused_imports)]
use super::*;
pub(crate) const EVENTS_UA: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
pub(crate) const EVENTS_PATHS: &[&str] =
    &["/", "/p/1", "/p/2", "/p/3", "/blog/como-escolher", "/carrinho", "/checkout", "/sobre"];

/// A tracker request: `POST /rastro/events` as a browser sends it (text/plain, a UA, the page's Origin).
pub(crate) fn tracker_request(host: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /rastro/events HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {EVENTS_UA}\r\nOrigin: https://loja.example.com\r\n\
         Content-Type: text/plain;charset=UTF-8\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Event `i` of the run: visitor `i % visitors`, a fresh pageview id, a path, sometimes a landing with UTM.
pub(crate) fn tracker_event(i: usize) -> String {
    let path = EVENTS_PATHS[i % EVENTS_PATHS.len()];
    let query = if i.is_multiple_of(7) { "?utm_source=ig&utm_medium=social&utm_campaign=natal" } else { "" };
    format!(
        r#"{{"type":"pageview","pageviewId":"p_loadgen{i:016}","url":"https://loja.example.com{path}{query}","referrer":"https://www.google.com/"}}"#
    )
}

pub(crate) fn peak_rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
}

pub(crate) fn events(a: EventsArgs) -> AnyResult<()> {
    if a.connections == 0 || a.requests == 0 || a.visitors == 0 {
        return Err("--connections, --requests and --visitors must be positive".into());
    }
    let binary = a.daemon.binary()?;
    let db = FreshDb::new(a.daemon.database_url.as_deref())?;
    let sqlite_file = db.dir.as_ref().map(|d| d.join("rastrod.db"));
    let backend = if db.pg.is_some() { "PostgreSQL (fresh schema)" } else { "SQLite (fresh file, synchronous=FULL)" };
    let db_url = db.url.clone();
    if a.expired > 0 {
        expired_fill::fill(&db_url, a.expired)?;
    }
    let cutoff =
        expired_fill::cutoff(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64);
    // Limits far above the load: this measures ingestion, not the limiter.
    let env = [
        ("RASTRO_TRACKER_IP_RATE", "100000000".to_string()),
        ("RASTRO_TRACKER_SITE_RATE", "100000000".to_string()),
        ("RASTRO_TRACKER_NEW_VISITOR_RATE", "100000000".to_string()),
        // The retention actor's first round 3 s after the start (during the warm-up), when there is a backlog.
        ("RASTRO_RETENTION_INTERVAL", if a.expired > 0 { "3s" } else { "1h" }.to_string()),
    ];
    let mut daemon = Daemon::start(binary, db, &env)?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        println!("{}", machine_line());
        println!(
            "daemon pid {pid} on {addr}, {backend}; {} connections, {} visitors, {} one-pageview requests, {} 50-event batches",
            a.connections, a.visitors, a.requests, a.batches
        );
        let mut c = Conn::open(&addr).await?;
        if a.expired == 0 {
            create_site(&mut c, &addr, &key, expired_fill::SITE_BODY).await?;
        }
        let ping = ping_maker(&addr, &key);
        if a.warmup > 0 {
            phase("warmup", &addr, a.connections, a.warmup, &[200], &pid, ping.clone()).await?;
        }
        let store = rastrod::db::Db::open(&db_url, 1, 1, 16)?;
        if a.expired > 0 {
            // The deletion must be under way when the measured phases start.
            let t = Instant::now();
            while expired_fill::left(&store, cutoff).await? >= a.expired as i64 && t.elapsed() < Duration::from_secs(30) {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        let (expired0, deleting) = (expired_fill::left(&store, cutoff).await?, Instant::now());
        let visitors = a.visitors;
        let one = {
            let addr = addr.clone();
            Arc::new(move |_c: usize, i: usize| {
                let body = format!(r#"{{"siteId":"loja","visitorId":"v_loadgen{:014}","events":[{}]}}"#, i % visitors, tracker_event(i));
                tracker_request(&addr, &body)
            })
        };
        let pv = phase("pageview", &addr, a.connections, a.requests, &[200], &pid, one).await?;
        let offset = a.requests;
        let batch = {
            let addr = addr.clone();
            Arc::new(move |_c: usize, i: usize| {
                let events: Vec<String> = (0..50).map(|k| tracker_event(offset + i * 50 + k)).collect();
                let body = format!(r#"{{"siteId":"loja","visitorId":"v_loadgenb{:013}","events":[{}]}}"#, i, events.join(","));
                tracker_request(&addr, &body)
            })
        };
        let bt = if a.batches > 0 { Some(phase("batch50", &addr, a.connections, a.batches, &[200], &pid, batch).await?) } else { None };
        let (expired1, during) = (expired_fill::left(&store, cutoff).await?, deleting.elapsed());
        // Rollup lag: how long until the report actor has applied everything accepted.
        let lag_start = Instant::now();
        loop {
            let left = store.run(|c| Ok(rastrod::store::analytics::outbox_len(c)?)).await?;
            if left == 0 {
                break;
            }
            if lag_start.elapsed() > Duration::from_secs(120) {
                return Err(format!("{left} events still not applied after 120 s").into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let drain = lag_start.elapsed();
        // What the run stored, measured before the floor below adds its own
        // event rows to the same database.
        let stored = (a.requests + a.batches * 50) as f64;
        let bytes_line = stored_bytes(&store, stored).await?;
        if sqlite_file.is_some() {
            // "After a checkpoint": the WAL's frames folded into the file and
            // the WAL cut to nothing, so the file is the pages in use.
            store.run(|c| Ok(rastrod::db::sql::RawQuery::new("PRAGMA wal_checkpoint(TRUNCATE)").execute(c)?)).await?;
        }
        let free_bytes = if sqlite_file.is_some() { Some(free_pages(&store).await?) } else { None };
        let file_bytes: Option<u64> = sqlite_file.as_ref().map(|file| {
            ["", "-wal"]
                .iter()
                .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", file.display())).ok())
                .map(|m| m.len())
                .sum()
        });
        // The floor (issue 25): the same event rows written straight through a
        // writer of the same database, from as many tasks as connections, with
        // no HTTP and no rules: one row per write, then 50.
        let floor_one = insert_floor(&db_url, a.connections, a.requests, 1).await?;
        let floor_batch = if a.batches > 0 { Some(insert_floor(&db_url, a.connections, a.batches, 50).await?) } else { None };
        let mut c = Conn::open(&addr).await?;
        let png = phase("ping", &addr, a.connections, a.requests, &[200], &pid, ping).await?;
        let _ = c.roundtrip(&request("GET", "/health", &addr, &key, None)).await;
        let page = super::federation::metrics_page(&addr, &key).await?;
        let source = |s: &str| super::ingest::metric(&page, &format!("rastrod_tracker_sessions_total{{source=\"{s}\"}}"));
        let (kept, read) = (source("memory"), source("read"));

        println!();
        pv.print();
        if let Some(b) = &bt {
            b.print();
            println!("{:<11} = {:.0} events/s in 50-event batches", "", b.rate() * 50.0);
        }
        png.print();
        println!(
            "floor: the same rows inserted directly, {floor_one:.0} events/s one per write (pageview = {:.1} % of it){}",
            pv.rate() / floor_one * 100.0,
            match (&bt, floor_batch) {
                (Some(b), Some(f)) => format!(", {f:.0} events/s 50 per write (batches = {:.1} % of it)", b.rate() * 50.0 / f * 100.0),
                _ => String::new(),
            }
        );
        println!(
            "ratio pageview/ping = {:.1} %; pageview p99 {:.2} ms (target ≥ 20,000 events/s and p99 ≤ 25 ms on SQLite, ≥ 5,000/s on PostgreSQL)",
            pv.rate() / png.rate() * 100.0,
            pct(&pv.lat_us, 99.0) as f64 / 1000.0
        );
        println!("rollups: the outbox was empty {:.0} ms after the last answer (target: trail ≤ 2 s)", drain.as_secs_f64() * 1000.0);
        if let (Some(kept), Some(read)) = (kept, read) {
            // Only a visitor's second batch onwards has a session to take (STORE-12).
            println!(
                "current sessions of returning visitors: {kept:.0} from this process's memory, {read:.0} read ({:.1} % from memory)",
                kept / (kept + read).max(1.0) * 100.0
            );
        }
        if a.expired > 0 {
            let gone = expired0 - expired1;
            println!(
                "retention: {gone} expired events deleted during the phases ({:.1} s) = {:.0} rows/s; {expired1} left then",
                during.as_secs_f64(),
                gone as f64 / during.as_secs_f64()
            );
            let t = Instant::now();
            while expired_fill::left(&store, cutoff).await? > 0 && t.elapsed() < Duration::from_secs(1_800) {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            let total = deleting.elapsed().as_secs_f64();
            println!("retention: all {} expired events gone {total:.1} s after the first measured request = {:.0} rows/s over the whole run", expired0, expired0 as f64 / total);
        }
        if let Some(kib) = peak_rss_kib(&pid) {
            println!("daemon peak RSS {:.1} MiB (target ≤ 150 MB)", kib as f64 / 1024.0);
        }
        println!("{bytes_line}");
        if let Some(bytes) = file_bytes {
            println!(
                "SQLite file and WAL after a checkpoint: {:.1} MiB = {:.0} bytes per stored pageview, rollups included, \
                 of which {:.0} in free pages (the outbox's, reused by later writes)",
                bytes as f64 / 1_048_576.0,
                bytes as f64 / stored,
                free_bytes.unwrap_or(0) as f64 / stored
            );
        }
        println!("{}", machine_line());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    });
    daemon.stop();
    outcome
}

/// What each table and index holds per stored pageview (pages in use: on
/// SQLite what a checkpoint leaves in the file, WAL folded in; on
/// PostgreSQL the relations of the schema after a `VACUUM`, what autovacuum
/// leaves: until then the outbox's applied rows are dead tuples still in its
/// pages), the largest first: where the bytes per pageview go.
async fn stored_bytes(store: &rastrod::db::Db, stored: f64) -> AnyResult<String> {
    #[derive(diesel::QueryableByName)]
    struct Size {
        #[diesel(sql_type = diesel::sql_types::Text)]
        name: String,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        bytes: i64,
    }
    let sizes = store
        .run(|c| {
            if !c.is_sqlite() {
                rastrod::db::sql::RawQuery::new("VACUUM").execute(c)?;
            }
            let sql = if c.is_sqlite() {
                "SELECT name, CAST(SUM(pgsize) AS BIGINT) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC"
            } else {
                "SELECT c.relname::text AS name, pg_relation_size(c.oid)::bigint AS bytes FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() \
                 AND c.relkind IN ('r', 'i') ORDER BY bytes DESC"
            };
            Ok(rastrod::db::sql::RawQuery::new(sql).load::<Size>(c)?)
        })
        .await?;
    let total: i64 = sizes.iter().map(|s| s.bytes).sum();
    let parts: Vec<String> = sizes
        .iter()
        .filter(|s| s.bytes as f64 >= total as f64 / 50.0)
        .map(|s| format!("{} {:.0}", s.name, s.bytes as f64 / stored))
        .collect();
    Ok(format!(
        "stored: {:.0} bytes per pageview in tables and indexes (target ≤ 150 on SQLite, ≤ 200 on PostgreSQL); the largest: {}",
        total as f64 / stored,
        parts.join(", ")
    ))
}

/// Bytes of the SQLite file's free pages (on its freelist).
async fn free_pages(store: &rastrod::db::Db) -> AnyResult<i64> {
    let sql = "SELECT CAST(f.freelist_count * p.page_size AS BIGINT) AS n FROM pragma_freelist_count() f, pragma_page_size() p";
    let rows = store.run(move |c| Ok(rastrod::db::sql::RawQuery::new(sql).load::<rastrod::db::row::Count>(c)?)).await?;
    Ok(rows.first().map_or(0, |r| r.n))
}

/// Events per second when `writes` writes of `per_write` event rows go
/// straight to a writer of the database (no HTTP, no acceptance rules), from
/// `tasks` tasks at once: what the storage alone allows.
async fn insert_floor(db_url: &str, tasks: usize, writes: usize, per_write: usize) -> AnyResult<f64> {
    use rastrod::store::analytics::EventRow;
    let store = Arc::new(rastrod::db::Db::open(db_url, 2, 1_000, 100_000)?);
    let row = move |i: usize| EventRow {
        id: format!("e_floor{per_write:02}{i:017}"),
        site_id: "loja".into(),
        session_id: format!("s_floor{:017}", i / 4),
        visitor_id: format!("v_floor{:014}", i / 4),
        kind: "pageview".into(),
        name: None,
        path: EVENTS_PATHS[i % EVENTS_PATHS.len()].into(),
        route: EVENTS_PATHS[i % EVENTS_PATHS.len()].into(),
        occurred_at: 1_790_000_000_000 + i as i64,
        pageview_id: Some(format!("p_floor{per_write:02}{i:014}")),
        properties: None,
        engaged_ms: None,
        lcp: None,
        inp: None,
        cls: None,
        fcp: None,
        ttfb: None,
    };
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..tasks.max(1) {
        let (store, next) = (store.clone(), next.clone());
        handles.push(tokio::spawn(async move {
            loop {
                let w = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if w >= writes {
                    return Ok::<(), rastrod::error::Error>(());
                }
                let rows: Vec<EventRow> = (w * per_write..(w + 1) * per_write).map(row).collect();
                store.write(move |c| Ok(rastrod::store::analytics::insert_events(c, &rows)?)).await?;
            }
        }));
    }
    for h in handles {
        h.await??;
    }
    Ok((writes * per_write) as f64 / start.elapsed().as_secs_f64())
}
