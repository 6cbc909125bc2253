//! leads-csv: a site with a million leads (written through the services, as
//! `report` writes them), then `GET /v1/sites/{siteId}/leads.csv` for the whole
//! year from a `rastrod serve` child: rows per second, time to the first byte,
//! and the daemon's memory before and at its peak during the download
//! (REPORTING §6: ≥ 100,000 rows/s with flat memory; rule REP-11).

#[allow(unused_imports)]
use super::*;

pub(crate) fn rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
}

pub(crate) fn leads_csv(a: LeadsCsvArgs) -> AnyResult<()> {
    let binary = a.daemon.binary()?;
    let fresh = FreshDb::new(a.daemon.database_url.as_deref())?;
    let url = fresh.url.clone();
    let backend = if fresh.pg.is_some() { "PostgreSQL (fresh schema)" } else { "SQLite (fresh file)" };
    println!("{}", machine_line());
    let days = 366;
    let plan = Arc::new(FillPlan {
        sites: 1,
        days,
        leads: a.leads,
        day0: FILL_END_DAY - days * DAY_MS,
        trees: vec![AdTree::new(0, 40)],
    });
    let fill_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let (from, to) = (plan.day0, plan.day0 + days * DAY_MS - 1);
    fill_rt.block_on(async {
        let db = Db::open(&url, 4, 256, 100_000)?;
        create_fill_site(&db, 0).await?;
        let start = Instant::now();
        let batch = if fresh.pg.is_some() { 500 } else { 5_000 };
        let written = fill_sites(db.clone(), plan.clone(), vec![0], batch, Arc::new(AtomicUsize::new(0))).await?;
        println!("fill ({backend}): {written} leads of one site in {:.1} s", start.elapsed().as_secs_f64());
        if db.backend() == Backend::Postgres {
            db.run(|c| c.batch_execute("VACUUM ANALYZE").map_err(Error::from)).await?;
        }
        AnyResult::Ok(())
    })?;
    drop(fill_rt);
    let env = [("RASTRO_LEADS_CSV_PAGE", a.page.to_string())];
    let mut daemon = Daemon::start(binary, fresh, &env)?;
    let rt = a.daemon.client_runtime()?;
    let outcome = rt.block_on(async {
        let (addr, key, pid) = (daemon.addr.clone(), daemon.key.clone(), daemon.pid());
        wait_ready(&addr, &key).await?;
        for run in 0..a.runs {
            let before = rss_kib(&pid).unwrap_or(0);
            let path = format!("/v1/sites/{}/leads.csv?from={from}&to={to}", FillPlan::site_id(0));
            let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nConnection: close\r\n\r\n");
            let mut stream = TcpStream::connect(&addr).await?;
            let start = Instant::now();
            stream.write_all(req.as_bytes()).await?;
            let mut buf = vec![0u8; 256 * 1024];
            let (mut bytes, mut lines, mut first) = (0usize, 0usize, None);
            let mut peak = before;
            let mut last_sample = Instant::now();
            loop {
                let n = stream.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                first.get_or_insert_with(|| start.elapsed());
                bytes += n;
                lines += buf[..n].iter().filter(|b| **b == b'\n').count();
                if last_sample.elapsed() > Duration::from_millis(50) {
                    peak = peak.max(rss_kib(&pid).unwrap_or(0));
                    last_sample = Instant::now();
                }
            }
            let secs = start.elapsed().as_secs_f64();
            peak = peak.max(rss_kib(&pid).unwrap_or(0));
            // The header block and chunk-size lines are a few lines more than the rows.
            let rows = lines.saturating_sub(1);
            println!(
                "run {run}: ~{rows} lines, {:.1} MB in {secs:.2} s = {:.0} rows/s (target ≥ 100,000); first byte after {:.0} ms; \
                 daemon RSS {} MiB before, {} MiB at its peak during the download (page {} leads)",
                bytes as f64 / 1e6,
                rows as f64 / secs,
                first.unwrap_or_default().as_secs_f64() * 1e3,
                before / 1024,
                peak / 1024,
                a.page
            );
        }
        AnyResult::Ok(())
    });
    daemon.stop();
    outcome
}
