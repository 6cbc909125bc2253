//! One run.

#[allow(unused_imports)]
use super::*;

pub(crate) const OWNER: &str = "bench";
pub(crate) const ACCOUNTS_PER_SITE: usize = 10;

pub(crate) fn bench(cli: &Cli) -> AnyResult<()> {
    let concurrency = cli.concurrency.first().copied().unwrap_or(4);
    let fresh = FreshDb::new(cli.database_url.as_deref())?;
    let cli = cli.clone();
    // The actors and their timers die with the System.
    actix_web::rt::System::new().block_on(async move { bench_in_system(&cli, concurrency, &fresh).await })
}

pub(crate) async fn count(state: &AppState, sql: &'static str) -> AnyResult<i64> {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let rows = state.cx.read(move |c| Ok(RawQuery::new(sql).load::<N>(c)?)).await?;
    Ok(rows.first().map_or(0, |r| r.n))
}

/// Points every account's next run at `at`.
pub(crate) async fn set_next_run_at(state: &AppState, at: i64) -> AnyResult<()> {
    state
        .cx
        .write_plain(move |c| {
            for mut row in rastrod::store::meta::sync::all(c)? {
                row.next_run_at = at;
                rastrod::store::meta::sync::save(c, &row)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}

pub(crate) async fn run_due(state: &AppState) -> AnyResult<BTreeMap<String, Vec<Outcome>>> {
    let sup = state.actors.sync.get().ok_or("the supervisor is not running")?;
    Ok(sup.send(RunDue).await??)
}

/// Tallies the outcomes of a RunDue: "Synced(Backfill)" → n, …
pub(crate) fn tally(out: &BTreeMap<String, Vec<Outcome>>, failures: &mut Vec<String>) -> BTreeMap<String, usize> {
    let mut t = BTreeMap::new();
    for outcomes in out.values() {
        for o in outcomes {
            let key = match o {
                Outcome::Failed(why) => {
                    if failures.len() < 3 {
                        failures.push(why.clone());
                    }
                    "Failed".to_string()
                }
                other => format!("{other:?}"),
            };
            *t.entry(key).or_insert(0) += 1;
        }
    }
    t
}

pub(crate) fn show_tally(t: &BTreeMap<String, usize>) -> String {
    t.iter().map(|(k, v)| format!("{k}×{v}")).collect::<Vec<_>>().join(", ")
}

pub(crate) async fn bench_in_system(cli: &Cli, concurrency: usize, fresh: &FreshDb) -> AnyResult<()> {
    let (accounts, ads) = (cli.accounts, cli.ads);
    if accounts == 0 || ads == 0 {
        return Err("--accounts and --ads must be positive".into());
    }
    let sim = start_sim(accounts, ads, cli.sim_workers).await?;
    let env: BTreeMap<String, String> = [
        ("RASTRO_DATABASE_URL", fresh.url.clone()),
        ("RASTRO_DATA_DIR", fresh.dir.join("data").display().to_string()),
        ("RASTRO_SECRETS_KEY", rastrod::ids::secrets_key().unwrap()),
        ("RASTRO_META_GRAPH_URL", sim.base_url.clone()),
        ("RASTRO_SYNC_MAX_CONCURRENT", concurrency.to_string()),
        ("RASTRO_LOG", "error".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let config = Config::load_from(None, &env)?;
    let backend = if fresh.pg.is_some() { "PostgreSQL" } else { "SQLite" };
    let backfill_days = config.sync_backfill_days;
    // Noon in São Paulo: the daily run (04:00 local) is crossed during the steady state.
    let t0 = chrono_tz::America::Sao_Paulo
        .with_ymd_and_hms(2026, 11, 30, 12, 0, 0)
        .single()
        .ok_or("a valid start time")?
        .timestamp_millis();
    let clock = ManualClock::new(t0);
    let state = rastrod::server::open_state(config, clock.clone()).await?;
    println!(
        "syncbench: {accounts} accounts × {ads} ads, {backend}, RASTRO_SYNC_MAX_CONCURRENT={concurrency}, \
         Graph simulator at {} ({} worker(s))",
        sim.base_url, cli.sim_workers
    );

    // Sites, the connection, the links.
    let setup = Instant::now();
    let sites_n = accounts.div_ceil(ACCOUNTS_PER_SITE);
    for s in 0..sites_n {
        let input = CreateSite {
            site_id: format!("bench-{s:03}"),
            name: format!("Bench site {s}"),
            currency: "BRL".into(),
            timezone: "America/Sao_Paulo".into(),
            owner_id: "bench-owner".into(),
            domains: None,
            cookieless: None,
        };
        let now = state.now();
        state.cx.write_plain(move |c| sites::create(c, now, input)).await?;
    }
    let input = SetMetaConnection { access_token: SecretString(Secret::new("t")) };
    meta_connection::set_connection(&state.cx, OWNER, input).await?;
    for s in 0..sites_n {
        let now = state.now();
        let ids: Vec<String> = (s * ACCOUNTS_PER_SITE..((s + 1) * ACCOUNTS_PER_SITE).min(accounts))
            .map(|i| format!("act_{}", FIRST_ACCOUNT + i as u64))
            .collect();
        let site = format!("bench-{s:03}");
        state
            .cx
            .write_plain(move |c| {
                for id in ids {
                    let input = LinkAdAccount { owner_key: OWNER.into(), ad_account_id: id, only_own: false };
                    meta_links::link(c, now, &site, input)?;
                }
                Ok(())
            })
            .await?;
    }
    // Nothing due when the actors start (their rows point a month away), so the idle
    // footprint is measured first; then every row is due again and RunDue runs the backfill.
    set_next_run_at(&state, t0 + 30 * 24 * HOUR_MS).await?;
    let (setup_calls, setup_rest) = sim.totals();
    println!(
        "setup: {sites_n} sites, connected, {accounts} linked in {:.2} s ({} adspixels + {setup_rest} me/adaccounts calls)",
        setup.elapsed().as_secs_f64(),
        setup_calls[0]
    );

    // Idle actors.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss0, heap0) = (proc_status_bytes("VmRSS"), HEAP_NOW.load(Ordering::Relaxed));
    rastrod::actors::start(&state.cx, &state.actors);
    let sup = state.actors.sync.get().ok_or("the supervisor is not running")?.clone();
    let wait_from = Instant::now();
    loop {
        let live = sup.send(Children).await?;
        if live >= accounts {
            break;
        }
        if wait_from.elapsed() > Duration::from_secs(60) {
            return Err(format!("only {live} of {accounts} account actors started").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let every actor's first schedule read land.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss1, heap1) = (proc_status_bytes("VmRSS"), HEAP_NOW.load(Ordering::Relaxed));
    let heap_per_actor = heap1.saturating_sub(heap0) / accounts;
    let rss_per_actor = rss1.saturating_sub(rss0) / accounts as u64;
    println!(
        "idle actors: {accounts} started; live heap +{:.2} MiB = {heap_per_actor} B per actor; \
         RSS +{:.2} MiB = {rss_per_actor} B per actor (target ≤ 16384 B)",
        mib(heap1.saturating_sub(heap0) as u64),
        mib(rss1.saturating_sub(rss0))
    );

    // The full backfill.
    set_next_run_at(&state, t0).await?;
    let before = sim.totals();
    let mut failures = Vec::new();
    let started = Instant::now();
    let out = run_due(&state).await?;
    let backfill_s = started.elapsed().as_secs_f64();
    let after = sim.totals();
    let per_edge: Vec<u64> = (0..3).map(|k| after.0[k] - before.0[k]).collect();
    let calls: u64 = per_edge.iter().sum();
    let backfill_calls_per_account = calls as f64 / accounts as f64;
    let spend_rows = count(&state, "SELECT COUNT(*) AS n FROM ad_spend").await?;
    let expected_rows = (accounts * ads) as i64 * i64::from(backfill_days);
    println!(
        "backfill: {backfill_s:.2} s wall for {accounts} accounts ({:.1} accounts/s); runs: {}",
        accounts as f64 / backfill_s,
        show_tally(&tally(&out, &mut failures))
    );
    println!(
        "backfill: {calls} Graph calls = {backfill_calls_per_account:.2} per account (insights {:.2}, ads {:.2}, adspixels {:.2}; \
         max {} for one account); {} insights rows served; ad_spend holds {spend_rows} rows (expected {expected_rows})",
        per_edge[1] as f64 / accounts as f64,
        per_edge[2] as f64 / accounts as f64,
        per_edge[0] as f64 / accounts as f64,
        sim.max_per_account(),
        sim.insight_rows.load(Ordering::Relaxed)
    );
    let w = state.cx.storage_stats().writer;
    println!("backfill: writer stats {w:?}");
    println!(
        "backfill: peak RSS so far {:.1} MiB, peak live heap {:.1} MiB",
        mib(proc_status_bytes("VmHWM")),
        mib(HEAP_PEAK.load(Ordering::Relaxed) as u64)
    );

    // Steady state.
    let step = 45 * MINUTE_MS;
    let steps = (cli.steady_hours * HOUR_MS).div_euclid(step).max(1);
    let span_days = (steps * step) as f64 / (24 * HOUR_MS) as f64;
    let before = sim.totals();
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    let mut steady_wall = Duration::ZERO;
    let mut slowest = Duration::ZERO;
    for _ in 0..steps {
        clock.advance(step);
        let t = Instant::now();
        let out = run_due(&state).await?;
        let took = t.elapsed();
        steady_wall += took;
        slowest = slowest.max(took);
        for (k, v) in tally(&out, &mut failures) {
            *runs.entry(k).or_insert(0) += v;
        }
    }
    let after = sim.totals();
    let per_edge: Vec<u64> = (0..3).map(|k| after.0[k] - before.0[k]).collect();
    let calls: u64 = per_edge.iter().sum();
    let per_account_day = calls as f64 / accounts as f64 / span_days;
    println!(
        "steady state: {steps} steps of 45 min ({:.2} days, crossing 04:00 local); runs: {}",
        span_days,
        show_tally(&runs)
    );
    println!(
        "steady state: {calls} Graph calls = {per_account_day:.2} per account per day (insights {:.2}, ads {:.2}; target ≤ 40); \
         RunDue took {:.2} s in all, slowest step {:.2} s",
        per_edge[1] as f64 / accounts as f64 / span_days,
        per_edge[2] as f64 / accounts as f64 / span_days,
        steady_wall.as_secs_f64(),
        slowest.as_secs_f64()
    );
    if !failures.is_empty() {
        println!("failures (first few): {failures:?}");
    }
    let peak_rss = proc_status_bytes("VmHWM");
    println!(
        "memory: peak RSS (VmHWM) {:.1} MiB (target ≤ 200 MiB); peak live heap {:.1} MiB; RSS now {:.1} MiB",
        mib(peak_rss),
        mib(HEAP_PEAK.load(Ordering::Relaxed) as u64),
        mib(proc_status_bytes("VmRSS"))
    );
    println!(
        "RESULT concurrency={concurrency} backfill_s={backfill_s:.2} backfill_calls_per_account={backfill_calls_per_account:.2} \
         steady_calls_per_account_day={per_account_day:.2} peak_rss_mib={:.1} idle_heap_bytes_per_actor={heap_per_actor} \
         idle_rss_bytes_per_actor={rss_per_actor} spend_rows={spend_rows}",
        mib(peak_rss)
    );
    state.cx.close();
    Ok(())
}
