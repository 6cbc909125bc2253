//! `loadgen analytics-reports` (and `loadgen overview`): a fresh database
//! filled through the import (the live pipeline: sessions, goals, funnel
//! steps, outbox) with `--events` events over `--sites` sites and `--days`
//! days, the rollups applied by the report actor's drain, `--profiles`
//! identified people on the first site, then each analytics read timed in
//! process (the database work a request does, without HTTP). With `--keep`
//! the database stays for later runs with `--existing` (a 10,000,000-event
//! fill takes most of an hour). Figures only; the README puts them beside
//! the targets.

use std::sync::Arc;
use std::time::Instant;

use rastrod::clock::{Clock, DAY_MS, SystemClock};
use rastrod::db::Db;
use rastrod::demo::analytics::Rng;
use rastrod::service::analytics::definitions::{self, Matcher, Step, UpsertFunnel, UpsertGoal};
use rastrod::service::analytics::{
    ingest::import, people::search, reports::affiliates, reports::funnels, reports::goals, reports::live,
    reports::overview, reports::site_map, reports::vitals,
};
use rastrod::service::context::Context;
use rastrod::service::sites::{self, CreateSite, UpdateSite};
use serde_json::{Value, json};

pub type AnyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const PATHS: [&str; 12] = [
    "/",
    "/p/1",
    "/p/2",
    "/p/3",
    "/p/4",
    "/p/5",
    "/blog/a",
    "/blog/b",
    "/carrinho",
    "/checkout",
    "/obrigado",
    "/sobre",
];

fn site_id(s: usize) -> String {
    format!("bench{s}")
}

/// One site's day: visits of 1-6 pageviews (some with a cart event and vitals), in time order.
fn day_lines(site: usize, day: i64, events: usize, visitors: u64, r: &mut Rng) -> Vec<String> {
    let mut visits: Vec<(i64, u64)> = Vec::new();
    let mut n = 0;
    while n < events {
        let views = 1 + r.below(6) as usize;
        visits.push((day + r.below(20 * 3_600_000) as i64, r.below(visitors)));
        n += views + 1;
    }
    visits.sort();
    let mut seen = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for (i, (start, v)) in visits.into_iter().enumerate() {
        // One visit per visitor a day keeps each visitor's lines in order.
        if !seen.insert(v) {
            continue;
        }
        let mut t = start;
        for k in 0..1 + r.below(6) {
            let path = PATHS[r.below(PATHS.len() as u64) as usize];
            let pv = format!("p_{:08x}{:06x}{:02x}", (day / DAY_MS) as u32, i, k);
            lines.push(format!(
                r#"{{"type":"pageview","occurredAt":{t},"visitorId":"v_bench{site}_{v:010}","pageviewId":"{pv}","path":"{path}"}}"#
            ));
            if k == 0 {
                lines.push(format!(
                    r#"{{"type":"vitals","occurredAt":{t},"visitorId":"v_bench{site}_{v:010}","pageviewId":"{pv}","lcp":{},"inp":{},"cls":0.0{},"fcp":{},"ttfb":{}}}"#,
                    800 + r.below(4000), 40 + r.below(500), r.below(9), 400 + r.below(2500), 80 + r.below(1500)
                ));
            }
            if path.starts_with("/p/") && r.below(3) == 0 {
                t += 2_000;
                lines.push(format!(
                    r#"{{"type":"event","occurredAt":{t},"visitorId":"v_bench{site}_{v:010}","name":"add_to_cart","path":"{path}"}}"#
                ));
            }
            t += 15_000 + r.below(90_000) as i64;
        }
    }
    lines
}

fn goal(site: &str, key: &str, matcher: Matcher) -> UpsertGoal {
    UpsertGoal {
        site_id: site.into(),
        goal_id: None,
        key: key.into(),
        name: key.into(),
        matcher,
        value_cents: Some(1_000),
        active: None,
    }
}

fn page(p: &str) -> Matcher {
    Matcher::Pageview { path: p.into() }
}

/// 5 goals and 5 funnels of 5 steps per site, before the import.
fn define(c: &mut rastrod::db::AnyConnection, now: i64, site: &str) -> rastrod::error::Result<()> {
    for (k, m) in [
        ("checkout", page("/checkout")),
        ("obrigado", page("/obrigado")),
        ("produto", page("/p/:id")),
        ("blog", page("/blog/**")),
        ("carrinho", Matcher::Event { name: "add_to_cart".into() }),
    ] {
        definitions::upsert_goal(c, now, goal(site, k, m))?;
    }
    let step = |m: Matcher| Step { label: "step".into(), matcher: m };
    for f in 0..5 {
        let steps = vec![
            step(page(if f % 2 == 0 { "/" } else { "/blog/**" })),
            step(page("/p/:id")),
            step(Matcher::Event { name: "add_to_cart".into() }),
            step(page("/checkout")),
            step(page("/obrigado")),
        ];
        let input = UpsertFunnel {
            site_id: site.into(),
            funnel_id: None,
            key: format!("f{f}"),
            name: format!("Funnel {f}"),
            steps,
            window_ms: 3_600_000 * (1 + f as i64),
        };
        definitions::upsert_funnel(c, now, input)?;
    }
    Ok(())
}

fn stats(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let p = |q: f64| ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1];
    (p(0.5), p(0.99))
}

/// What to fill and time.
pub struct Plan {
    pub events: usize,
    pub sites: usize,
    pub days: i64,
    pub runs: usize,
    pub profiles: usize,
    /// The database is already filled (a `--keep` run): time only (profiles topped up).
    pub existing: bool,
    /// Time only the reads whose name starts with this.
    pub only: Option<String>,
}

const FIRST: [&str; 20] = [
    "Maria",
    "José",
    "Ana",
    "João",
    "Antônio",
    "Francisca",
    "Carlos",
    "Paulo",
    "Pedro",
    "Lucas",
    "Luiz",
    "Marcos",
    "Luís",
    "Gabriel",
    "Rafael",
    "Márcia",
    "Daniel",
    "Marcelo",
    "Bruno",
    "Eduardo",
];
const LAST: [&str; 30] = [
    "Silva",
    "Santos",
    "Oliveira",
    "Souza",
    "Rodrigues",
    "Ferreira",
    "Alves",
    "Pereira",
    "Lima",
    "Gomes",
    "Costa",
    "Ribeiro",
    "Martins",
    "Carvalho",
    "Almeida",
    "Lopes",
    "Soares",
    "Fernandes",
    "Vieira",
    "Barbosa",
    "Rocha",
    "Dias",
    "Nascimento",
    "Andrade",
    "Moreira",
    "Nunes",
    "Marques",
    "Machado",
    "Mendes",
    "Freitas",
];

/// `profiles` people on a site, as identify leaves them (identity row, profile,
/// search terms); the first ones are persons of the fill's visitors (an alias
/// each), so `listPeople` reads real session totals for them.
async fn fill_profiles(cx: &Context, site: &str, profiles: usize, visitors: usize) -> AnyResult<()> {
    let have = {
        let s = site.to_string();
        cx.read(move |c| {
            Ok(rastrod::store::analytics::retention::count_before(c, "web_profiles", "identified_at", &s, i64::MAX)?)
        })
        .await?
    } as usize;
    if have >= profiles {
        println!("profiles: {have} on {site} already");
        return Ok(());
    }
    let start = Instant::now();
    let now = SystemClock.now_ms();
    for from in (have..profiles).step_by(5_000) {
        let (site, to) = (site.to_string(), (from + 5_000).min(profiles));
        // 5,000 people a transaction of its own (see `db::writer`).
        cx.write_alone(move |c| {
            use rastrod::store::analytics::people as people_store;
            for i in from..to {
                let (f, l1, l2) = (FIRST[i % 20], LAST[(i / 20) % 30], LAST[(i / 600) % 30]);
                let name = format!("{f} {l1} {l2}");
                let email = format!("{}.{}{i}@example.com", f.to_lowercase(), l1.to_lowercase());
                let id = people_store::identity_or_insert(
                    c,
                    "bench",
                    &format!("{i:064x}"),
                    &format!("u_bench{i:012}"),
                    now,
                )?;
                let t = now - (profiles - i) as i64 * 1_000;
                let p = people_store::ProfileRow {
                    site_id: site.clone(),
                    visitor_id: id.clone(),
                    name: Some(name.clone()),
                    email: Some(email.clone()),
                    attributes: format!(r#"{{"plan":"p{}"}}"#, i % 3),
                    identified_at: t,
                    first_seen_at: t,
                    last_seen_at: t,
                };
                people_store::insert_profile(c, &p)?;
                people_store::set_terms(c, &site, &id, &search::terms(Some(&name), Some(&email)))?;
                if i < visitors {
                    people_store::alias_or_keep(c, &site, &format!("v_{site}_{i:010}"), &id, t)?;
                }
            }
            Ok(rastrod::service::effects::Written::plain(()))
        })
        .await?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("profiles: {} identified on {site} in {secs:.1} s", profiles - have);
    Ok(())
}

pub fn run(url: &str, plan: Plan) -> AnyResult<()> {
    let Plan { events, sites: site_count, days, runs, profiles, existing, only } = plan;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let db = Db::open(url, 4, 256, 100_000)?;
        let env = std::collections::BTreeMap::new();
        let mut config = rastrod::config::Config::load_from(None, &env)?;
        config.rollup_batch_max = 20_000;
        let clock: rastrod::clock::SharedClock = Arc::new(SystemClock);
        let now = clock.now_ms();
        let cx = Context::new(db, clock, Arc::new(config), "http://127.0.0.1:9")?;
        let today = now - now.rem_euclid(DAY_MS);
        let first_day = today - days * DAY_MS;
        let per_day = (events / site_count / days as usize).max(1);
        if !existing {
            fill(&cx, now, first_day, site_count, days, events, per_day).await?;
        }
        let visitors = (per_day * 3).max(10);
        fill_profiles(&cx, &site_id(0), profiles, visitors).await?;
        // 10,000 visitors live: one pageview each in the last four minutes, spread over the sites.
        let live_now = SystemClock.now_ms();
        for s in 0..site_count {
            let lines: Vec<String> = (0..10_000 / site_count)
                .map(|v| {
                    let t = live_now - 240_000 + (v as i64 * 24) % 240_000;
                    format!(
                        r#"{{"type":"pageview","occurredAt":{t},"visitorId":"v_live{s}_{v:08}","pageviewId":"p_live{live_now}_{v:010}","path":"/"}}"#
                    )
                })
                .collect();
            import::import(&cx, &site_id(s), &format!("bench-live-{live_now}"), lines.join("\n").as_bytes(), true).await?;
        }
        rastrod::actors::report::drain(&cx).await?;
        // What the layout actor does with the days the fill completed (PostgreSQL).
        let t = Instant::now();
        let days = rastrod::actors::layout::drain(&cx).await?;
        if days > 0 {
            println!("funnel step rows laid out: {days} (site, day) in {:.1} s", t.elapsed().as_secs_f64());
        }
        time_reads(&cx, site_count, today, live_now, runs, only.as_deref()).await
    })
}

async fn fill(
    cx: &Context,
    now: i64,
    first_day: i64,
    site_count: usize,
    days: i64,
    events: usize,
    per_day: usize,
) -> AnyResult<()> {
    {
        for s in 0..site_count {
            let id = site_id(s);
            let input = CreateSite {
                site_id: id.clone(),
                name: id.clone(),
                currency: "BRL".into(),
                timezone: "UTC".into(),
                owner_id: "bench".into(),
                domains: Some(vec!["bench.example".into()]),
                cookieless: None,
            };
            cx.write_plain(move |c| sites::create(c, now, input)).await?;
            let sid = id.clone();
            let patterns = UpdateSite { route_patterns: Some(vec!["/p/:id".into()]), ..UpdateSite::default() };
            cx.write_plain(move |c| rastrod::service::analytics::settings::update(c, now, &sid, patterns)).await?;
            cx.write_plain(move |c| define(c, now, &id)).await?;
        }
        // Imports run the funnel rebuilds as part of the drain below.
        println!(
            "filling: {events} events over {site_count} sites × {days} days ({per_day} per site-day) through the import"
        );
        let start = Instant::now();
        let mut stored = 0usize;
        let mut r = Rng(42);
        for d in 0..days {
            let day = first_day + d * DAY_MS;
            for s in 0..site_count {
                let lines = day_lines(s, day, per_day, (per_day as u64 * 3).max(10), &mut r);
                for (k, chunk) in lines.chunks(import::MAX_LINES).enumerate() {
                    let body = chunk.join("\n");
                    let a = import::import(cx, &site_id(s), &format!("bench-{d}-{k}"), body.as_bytes(), true).await?;
                    stored += a.accepted;
                }
            }
            if d % 30 == 29 {
                rastrod::actors::report::drain(cx).await?;
                eprintln!("  … day {}/{days}: {stored} events in {:.0} s", d + 1, start.elapsed().as_secs_f64());
            }
        }
        rastrod::actors::report::drain(cx).await?;
        let secs = start.elapsed().as_secs_f64();
        println!(
            "fill: {stored} events accepted in {secs:.1} s = {:.0} events/s (import + rollups)",
            stored as f64 / secs
        );
        Ok(())
    }
}

/// Each read `runs` times, in process, on the read pool as a request runs it.
async fn time_reads(
    cx: &Context,
    site_count: usize,
    today: i64,
    live_now: i64,
    runs: usize,
    only: Option<&str>,
) -> AnyResult<()> {
    {
        let ids: Vec<String> = (0..site_count).map(site_id).collect();
        let d90 = (today - 90 * DAY_MS, today - 1);
        let d366 = (today - 366 * DAY_MS, today - 1);
        let h24 = (today - 24 * 3_600_000, today - 1);
        // São Paulo's days ending with the last whole one before today's UTC midnight.
        const SP: &str = "America/Sao_Paulo";
        let sp = rastrod::service::reporting::timezone::Zone::of(Some(SP), &[])?.expect("a zone");
        let last = sp.date(today - 1);
        let sp_days = |n: i64| {
            let first = last - chrono::Duration::days(n - 1);
            (sp.start_of(first), sp.start_of(last.succ_opt().unwrap_or(last)) - 1)
        };
        let (sp366, sp90) = (sp_days(366), sp_days(90));
        let checkout = json!({"dim": "page", "op": "is", "values": ["/checkout"]});
        let entry = json!({"dim": "entryPage", "op": "is", "values": ["/"]});
        let cases: Vec<(&str, Value)> = vec![
            ("overview 366 days × all sites", json!({"siteIds": ids, "from": d366.0, "to": d366.1})),
            ("overview 90 days × all sites", json!({"siteIds": ids, "from": d90.0, "to": d90.1})),
            (
                "overview hourly 24 h × all sites",
                json!({"siteIds": ids, "from": h24.0, "to": h24.1, "interval": "hour"}),
            ),
            // REPORTING §6: local days, compare, filters.
            (
                "overview 366 local days × all sites (São Paulo)",
                json!({"siteIds": ids, "from": sp366.0, "to": sp366.1, "timezone": SP}),
            ),
            (
                "overview 90 local days × all sites (São Paulo)",
                json!({"siteIds": ids, "from": sp90.0, "to": sp90.1, "timezone": SP}),
            ),
            (
                "overview 90 days × all sites, compare",
                json!({"siteIds": ids, "from": d90.0, "to": d90.1, "compare": "previousPeriod"}),
            ),
            (
                "overview 90 days × one site, 1 filter",
                json!({"siteIds": [site_id(0)], "from": d90.0, "to": d90.1, "filters": [checkout]}),
            ),
            (
                "overview 90 days × one site, 2 filters",
                json!({"siteIds": [site_id(0)], "from": d90.0, "to": d90.1, "filters": [checkout, entry]}),
            ),
            (
                "overview 366 days × all sites, 2 filters",
                json!({"siteIds": ids, "from": d366.0, "to": d366.1, "filters": [checkout, entry]}),
            ),
            ("goalsReport 90 days, one site", json!({"siteId": site_id(0), "from": d90.0, "to": d90.1})),
            ("funnelsReport 5×5, 90 days, one site", json!({"siteId": site_id(0), "from": d90.0, "to": d90.1})),
            ("affiliatesReport 90 days, one site", json!({"siteId": site_id(0), "from": d90.0, "to": d90.1})),
            ("vitalsReport 90 days, one site", json!({"siteId": site_id(0), "from": d90.0, "to": d90.1})),
            ("siteMap 90 days, one site", json!({"siteIds": [site_id(0)], "from": d90.0, "to": d90.1})),
            ("liveVisitors, 10,000 live, all sites (database read)", json!({"siteIds": ids, "now": live_now + 1})),
        ];
        // listPeople over the first site's profiles: no search, then searches from broad to narrow.
        let people = |search: Option<&str>| {
            let filter = search.map(|s| json!({"search": s}));
            json!({"siteId": site_id(0), "filter": filter, "paginationOpts": {"numItems": 50, "cursor": null}})
        };
        let mut cases = cases;
        cases.extend([
            ("listPeople first page, no search", people(None)),
            ("listPeople search \"maria\" (1 in 20)", people(Some("maria"))),
            ("listPeople search \"silva\" (a word start)", people(Some("silva"))),
            ("listPeople search \"maria silva s\"", people(Some("maria silva s"))),
            ("listPeople search \"ana.costa12\" (email)", people(Some("ana.costa12"))),
            ("listPeople search \"zzz\" (nothing)", people(Some("zzz"))),
        ]);
        for (name, args) in cases.into_iter().filter(|(name, _)| only.is_none_or(|o| name.starts_with(o))) {
            let mut ms = Vec::new();
            for _ in 0..runs {
                let a = args.clone();
                let cap = 2_000_000;
                let t = Instant::now();
                cx.read_pair(move |c, helper| {
                    let f = |e: serde_json::Error| rastrod::error::Error::invalid(e.to_string());
                    match name.split(' ').next().unwrap_or_default() {
                        "overview" => json(overview::overview(c, serde_json::from_value(a).map_err(f)?, false)),
                        "goalsReport" => json(goals::goals_report(c, serde_json::from_value(a).map_err(f)?)),
                        "funnelsReport" => {
                            json(funnels::funnels_report(c, helper, serde_json::from_value(a).map_err(f)?, cap))
                        }
                        "affiliatesReport" => {
                            json(affiliates::affiliates_report(c, serde_json::from_value(a).map_err(f)?))
                        }
                        "vitalsReport" => json(vitals::vitals_report(c, serde_json::from_value(a).map_err(f)?)),
                        "listPeople" => json(rastrod::service::analytics::people::list_people(
                            c,
                            b"bench",
                            serde_json::from_value(a).map_err(f)?,
                        )),
                        "liveVisitors," => json(live::live_visitors_of(
                            c,
                            serde_json::from_value(a).map_err(f)?,
                            300_000,
                            false,
                            rastrod::service::validate::MAX_SITES,
                        )),
                        _ => json(site_map::site_map(c, serde_json::from_value(a).map_err(f)?)),
                    }
                })
                .await?;
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            let (p50, p99) = stats(ms);
            println!("{name:<52} p50 {p50:>8.1} ms   p99 {p99:>8.1} ms   ({runs} runs)");
        }
        Ok(())
    }
}

/// A report's answer as the JSON a caller receives (serializing is part of the cost).
fn json<T: serde::Serialize>(r: rastrod::error::Result<T>) -> rastrod::error::Result<serde_json::Value> {
    r.and_then(|v| serde_json::to_value(v).map_err(rastrod::error::Error::internal))
}
