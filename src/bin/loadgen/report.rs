//! report: fill through the services, then time leads_report.

#[allow(unused_imports)]
use super::*;
/// Day 0 of the filled range: 366 days ending on 2026-11-29 (UTC).
pub(crate) const FILL_END_DAY: i64 = 1_796_040_000_000 / DAY_MS * DAY_MS;

pub(crate) struct FillPlan {
    pub(crate) sites: usize,
    pub(crate) days: i64,
    pub(crate) leads: usize,
    pub(crate) day0: i64,
    pub(crate) trees: Vec<AdTree>,
}

impl FillPlan {
    pub(crate) fn site_id(n: usize) -> String {
        format!("site-{n:02}")
    }
}

/// One lead of the fill: what recordLead gets, and the stage moves after it.
pub(crate) fn fill_lead(
    plan: &FillPlan,
    site_no: usize,
    seq: usize,
    occurred: i64,
    rng: &mut Lcg,
) -> (RecordLead, Vec<SetLeadStage>) {
    let lead_key = format!("wa:55{site_no:02}{seq:09}");
    let from_ad = rng.below(100) < 75;
    let origin = if from_ad { "ctwa_ad" } else { ["organic", "instagram_bio", "site"][rng.below(3) as usize] };
    let mut input = RecordLead {
        label: Some(format!("Cliente {seq}")),
        ..RecordLead::new(lead_key, format!("ev-{site_no}-{seq}-new"), occurred, origin)
    };
    if from_ad {
        let tree = &plan.trees[site_no];
        // A skewed pick: a few ads bring most leads, as in real accounts.
        let n = tree.ads.len() as u64;
        let pick = (rng.below(n) * rng.below(n) / n.max(1)) as usize;
        let [cid, cname, sid, sname, aid, aname] = &tree.ads[pick];
        input.campaign_id = Some(cid.clone());
        input.campaign_name = Some(cname.clone());
        input.adset_id = Some(sid.clone());
        input.adset_name = Some(sname.clone());
        input.ad_id = Some(aid.clone());
        input.ad_name = Some(aname.clone());
        input.click_id = Some(format!("ARAkLkA8rmlYlW{site_no:02}{seq:010}"));
    }
    let mut moves = Vec::new();
    let roll = rng.below(100);
    if roll < 25 {
        let at = occurred + HOUR_MS + rng.below(2 * DAY_MS as u64) as i64;
        moves.push(SetLeadStage {
            stage: Some(Stage::Qualified),
            column: None,
            revenue_cents: None,
            event_id: format!("ev-{site_no}-{seq}-q"),
            occurred_at: at,
            meta: None,
        });
        if roll < 8 {
            moves.push(SetLeadStage {
                stage: Some(Stage::Won),
                column: None,
                revenue_cents: Some(5_000 + rng.below(200_000) as i64),
                event_id: format!("ev-{site_no}-{seq}-w"),
                occurred_at: at + DAY_MS,
                meta: None,
            });
        }
    }
    (input, moves)
}

/// Writes the leads of the sites `site_nos`, day by day in time order, `batch` per transaction.
pub(crate) async fn fill_sites(
    db: Db,
    plan: Arc<FillPlan>,
    site_nos: Vec<usize>,
    batch: usize,
    done: Arc<AtomicUsize>,
) -> AnyResult<usize> {
    // Cell i = (day, site) gets floor((i+1)·L/C) − floor(i·L/C) leads: exactly L in all.
    let cells = plan.sites * plan.days as usize;
    let upto = |i: usize| (i as u128 * plan.leads as u128 / cells as u128) as usize;
    let mut rng = Lcg(0x5eed ^ site_nos.first().copied().unwrap_or(0) as u64);
    let mut pending: Vec<(String, RecordLead, Vec<SetLeadStage>)> = Vec::with_capacity(batch);
    let mut seq = vec![0usize; plan.sites];
    let mut written = 0;
    for day in 0..plan.days {
        for &s in &site_nos {
            let cell = day as usize * plan.sites + s;
            let n = upto(cell + 1) - upto(cell);
            let mut times: Vec<i64> =
                (0..n).map(|_| plan.day0 + day * DAY_MS + rng.below(DAY_MS as u64) as i64).collect();
            times.sort_unstable();
            for t in times {
                seq[s] += 1;
                let (input, moves) = fill_lead(&plan, s, seq[s], t, &mut rng);
                pending.push((FillPlan::site_id(s), input, moves));
            }
        }
        let last = day == plan.days - 1;
        while pending.len() >= batch || (last && !pending.is_empty()) {
            let take = pending.len().min(batch);
            let chunk: Vec<_> = pending.drain(..take).collect();
            let n = chunk.len();
            db.run(move |conn| {
                conn.transaction::<(), Error, _>(|c| {
                    for (site, input, moves) in chunk {
                        let now = input.occurred_at + 1_000;
                        let key = input.lead_key.clone();
                        leads::record(c, now, &site, input)?;
                        for m in moves {
                            let now = m.occurred_at + 1_000;
                            leads::set_stage(c, now, &site, &key, m)?;
                        }
                    }
                    Ok(())
                })
            })
            .await?;
            written += n;
            done.fetch_add(n, Ordering::Relaxed);
        }
    }
    Ok(written)
}

pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) site_ids: Vec<String>,
    pub(crate) from: i64,
    pub(crate) to: i64,
}

pub(crate) fn report(a: ReportArgs) -> AnyResult<()> {
    if a.sites == 0 || a.sites > 10 || a.days < 1 || a.days > 366 || a.batch == Some(0) {
        return Err("--sites must be 1-10, --days 1-366, --batch positive".into());
    }
    let fresh = if a.existing {
        FreshDb::existing(a.database_url.as_deref().unwrap_or_default())
    } else {
        let mut f = FreshDb::new(a.database_url.as_deref())?;
        f.keep = a.keep;
        f
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let threads = a.fill_threads.unwrap_or(if fresh.pg.is_some() { 2 } else { 1 }).clamp(1, a.sites);
        let batch = a.batch.unwrap_or(if fresh.pg.is_some() { 500 } else { 5_000 });
        let db = Db::open(&fresh.url, (threads as u32 + 2).max(4), 256, 100_000)?;
        let backend = match db.backend() {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        };
        println!("{}", machine_line());
        let plan = Arc::new(FillPlan {
            sites: a.sites,
            days: a.days,
            leads: a.leads,
            day0: FILL_END_DAY - a.days * DAY_MS,
            trees: (0..a.sites).map(|s| AdTree::new(s, a.ads_per_site)).collect(),
        });
        if !a.existing {
            println!(
                "filling {backend}: {} leads over {} sites × {} days, {} ads per site, {} per transaction, {threads} connection(s)",
                a.leads, a.sites, a.days, a.ads_per_site, batch
            );
            for s in 0..a.sites {
                create_fill_site(&db, s).await?;
            }
            let done = Arc::new(AtomicUsize::new(0));
            let start = Instant::now();
            let mut tasks = Vec::new();
            for t in 0..threads {
                let site_nos: Vec<usize> = (0..a.sites).filter(|s| s % threads == t).collect();
                tasks.push(tokio::spawn(fill_sites(db.clone(), plan.clone(), site_nos, batch, done.clone())));
            }
            let progress = {
                let done = done.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_secs(15)).await;
                        let n = done.load(Ordering::Relaxed);
                        let secs = start.elapsed().as_secs_f64();
                        eprintln!("  … {n} leads in {secs:.0} s ({:.0} leads/s)", n as f64 / secs);
                    }
                })
            };
            // PostgreSQL: autovacuum does this in production (it is off on some
            // test servers); without it every counter update leaves a dead row
            // version behind and the rollups the reports read grow tenfold.
            let vacuum = (db.backend() == Backend::Postgres).then(|| {
                let db = db.clone();
                tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        let _ = db
                            .run(|c| c.batch_execute("VACUUM lead_rollups, ad_labels, leads").map_err(Error::from))
                            .await;
                    }
                })
            });
            let mut written = 0;
            for t in tasks {
                written += t.await??;
            }
            progress.abort();
            if let Some(v) = vacuum {
                v.abort();
            }
            let secs = start.elapsed().as_secs_f64();
            println!("fill: {written} leads in {secs:.1} s = {:.0} leads/s (record + set_stage through the services)", written as f64 / secs);
            if db.backend() == Backend::Postgres {
                // What autovacuum would have done by the time anyone reads a report.
                let t = Instant::now();
                db.run(|c| c.batch_execute("VACUUM ANALYZE").map_err(Error::from)).await?;
                println!("VACUUM ANALYZE (autovacuum's job in production) took {:.1} s", t.elapsed().as_secs_f64());
            }
        }
        #[derive(diesel::QueryableByName)]
        struct N {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let counts = db
            .run(|c| {
                use diesel::RunQueryDsl;
                let q = |c: &mut rastrod::db::AnyConnection, t: &str| {
                    diesel::sql_query(format!("SELECT CAST(COUNT(*) AS BIGINT) AS n FROM {t}")).get_result::<N>(c).map(|r| r.n)
                };
                Ok((q(c, "leads")?, q(c, "lead_events")?, q(c, "lead_rollups")?))
            })
            .await?;
        println!("rows: {} leads, {} lead_events, {} lead_rollups", counts.0, counts.1, counts.2);

        let all: Vec<String> = (0..a.sites).map(FillPlan::site_id).collect();
        let (day0, end) = (plan.day0, plan.day0 + a.days * DAY_MS);
        let sp = 3 * HOUR_MS; // America/Sao_Paulo midnight in UTC
        let cases = [
            Case { name: format!("{} sites × {} UTC days", a.sites, a.days), site_ids: all.clone(), from: day0, to: end - 1 },
            Case {
                name: format!("{} sites × {} São Paulo days", a.sites, a.days - 1),
                site_ids: all.clone(),
                from: day0 + sp,
                to: end - DAY_MS + sp - 1,
            },
            Case { name: "1 site × 30 UTC days".into(), site_ids: all[..1].to_vec(), from: end - 30 * DAY_MS, to: end - 1 },
            Case {
                name: "1 site × 30 São Paulo days".into(),
                site_ids: all[..1].to_vec(),
                from: end - 31 * DAY_MS + sp,
                to: end - DAY_MS + sp - 1,
            },
        ];
        let pg = db.backend() == Backend::Postgres;
        println!(
            "\nleadsReport on {backend} ({} timed runs each, after 2 untimed; CPU = this process{}):",
            a.iterations,
            if pg { " + every postgres process" } else { "" }
        );
        for case in &cases {
            let mut times = Vec::with_capacity(a.iterations);
            let mut cpu = Vec::with_capacity(a.iterations);
            let mut summary = String::new();
            for i in 0..a.iterations + 2 {
                let args = LeadsReportArgs { site_ids: case.site_ids.clone(), from: case.from, to: case.to, compare: None, filters: Vec::new(), timezone: None };
                let cpu0 = cpu_ns_self() + if pg { cpu_ns_postgres() } else { 0 };
                let t = Instant::now();
                let r = db.run(move |c| leads_report(c, args, 12_000)).await?;
                let el = t.elapsed();
                let cpu1 = cpu_ns_self() + if pg { cpu_ns_postgres() } else { 0 };
                if i >= 2 {
                    times.push(el);
                    cpu.push(Duration::from_nanos(cpu1.saturating_sub(cpu0)));
                }
                let ads: usize = r.campaigns.iter().flat_map(|c| &c.adsets).map(|s| s.ads.len()).sum();
                summary = format!(
                    "{} leads, {} qualified, {} won, {} ad rows{}",
                    r.totals.leads,
                    r.totals.qualified,
                    r.totals.won,
                    ads,
                    if r.report_incomplete { ", incomplete" } else { "" }
                );
            }
            times.sort_unstable();
            cpu.sort_unstable();
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            println!(
                "  {:<30} p50 {:>7.1} ms  p99 {:>7.1} ms  min {:>7.1} ms  CPU p50 {:>6.1} ms  ({summary})",
                case.name,
                ms(pct(&times, 50.0)),
                ms(pct(&times, 99.0)),
                ms(times.first().copied().unwrap_or_default()),
                ms(pct(&cpu, 50.0)),
            );
        }
        println!("{}", machine_line());
        if a.keep {
            println!("kept the database: {}", fresh.url);
        }
        db.close();
        drop(fresh);
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })
}

/// The recording time of the sites (before every lead).
/// The fill's site number `s` (BRL, São Paulo).
pub(crate) async fn create_fill_site(db: &Db, s: usize) -> AnyResult<()> {
    let input = CreateSite {
        site_id: FillPlan::site_id(s),
        name: format!("Site {s}"),
        currency: "BRL".into(),
        timezone: "America/Sao_Paulo".into(),
        owner_id: "loadgen".into(),
        domains: None,
        cookieless: None,
    };
    db.write(move |c| sites::create(c, plan_now(), input)).await?;
    Ok(())
}

pub(crate) fn plan_now() -> i64 {
    FILL_END_DAY - 400 * DAY_MS
}
