//! The demo's live traffic (rule FAKE-09): while `rastrod demo` serves, a
//! round every [`TICK`] sends tracker batches for a few made-up visitors on
//! each demo site through the real ingestion (its checks, sessions, live
//! state), so "Agora no site" and the live list are never empty.
//!
//! The schedule is a pure function of the tick (the clock's time divided by
//! [`TICK`]): each site has [`SLOTS`] slots, each slot one visitor at a time
//! walking a journey of the demo's pages, one page every [`PAGE_TICKS`]
//! ticks, the next visitor arriving when its [`PERIOD`] ends. With the
//! slots staggered and a five-minute live window this keeps 3 to 6 visitors
//! live per site. Ids come from the tick, so a restarted demo goes on
//! without repeating a pageview id.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use serde_json::{Value, json};

use super::DEMO_SITES;
use super::analytics::UAS;
use crate::error::Result;
use crate::service::analytics::ingest::{self, Request};
use crate::service::analytics::vocabulary::LineType;
use crate::service::context::Context;

/// How often a round goes out.
pub const TICK: Duration = Duration::from_secs(15);
pub const TICK_MS: i64 = 15_000;
/// Visitors at once per site.
pub const SLOTS: u64 = 3;
/// Ticks a slot gives each visitor (4.5 minutes): the journey, then the visitor is gone.
pub const PERIOD: u64 = 18;
/// Ticks on a page (45 seconds): a pageview, then engagement.
pub const PAGE_TICKS: u64 = 3;

/// The visits' walks through the demo's pages (`analytics::PATHS`), 3 to 5
/// pages each so that a visit ends inside its period.
pub const JOURNEYS: &[&[&str]] = &[
    &["/", "/p/1", "/p/2", "/carrinho", "/checkout"],
    &["/blog/como-escolher", "/p/3", "/p/4"],
    &["/", "/sobre", "/contato"],
    &["/p/5", "/p/6", "/carrinho", "/checkout"],
    &["/", "/p/2", "/p/5", "/carrinho"],
];

/// What one visitor does on a tick: opens `page` of its journey, or stays on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Move {
    slot: u64,
    visit: u64,
    page: usize,
    opens: bool,
}

/// A small stable mix of the visitor's coordinates (the choice of journey, browser, arrival).
fn mix(site: usize, slot: u64, visit: u64) -> u64 {
    let mut x = visit.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (slot << 8) ^ site as u64;
    x = (x ^ (x >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^ (x >> 29)
}

fn journey(site: usize, slot: u64, visit: u64) -> &'static [&'static str] {
    JOURNEYS[(mix(site, slot, visit) % JOURNEYS.len() as u64) as usize]
}

/// The moves of a site's visitors on `tick`. The slots start a third of a
/// period apart, so one of them is always in its first pages (someone is on
/// the site from the first round on). On the generator's `first` round every
/// visitor opens the page it is on: one met halfway through a page has no
/// pageview yet, and an engagement for it would be refused.
fn moves(site: usize, tick: u64, first: bool) -> Vec<Move> {
    (0..SLOTS)
        .filter_map(|slot| {
            let t = tick + slot * (PERIOD / SLOTS) + site as u64;
            let (visit, at) = (t / PERIOD, t % PERIOD);
            let page = (at / PAGE_TICKS) as usize;
            let opens = first || at % PAGE_TICKS == 0;
            (page < journey(site, slot, visit).len()).then_some(Move { slot, visit, page, opens })
        })
        .collect()
}

/// The arrival: direct, from Google, Instagram or a Facebook ad (a query or a referrer).
fn arrival(m: &Move, site: usize) -> (&'static str, Option<&'static str>) {
    match (mix(site, m.slot, m.visit) >> 8) & 3 {
        0 => ("", None),
        1 => ("", Some("https://www.google.com/")),
        2 => ("?utm_source=ig&utm_medium=social&utm_campaign=Black+Friday", None),
        _ => ("?utm_source=facebook&utm_medium=cpc&utm_campaign=Black+Friday", None),
    }
}

/// One visitor's batch for its move.
fn batch(site: usize, site_id: &str, domain: &str, m: &Move) -> (Value, String) {
    let path = journey(site, m.slot, m.visit)[m.page];
    let pv = format!("p_live{site}{}{:012}{:02}", m.slot, m.visit % 1_000_000_000_000, m.page);
    let (query, referrer) = if m.page == 0 { arrival(m, site) } else { ("", None) };
    let url = format!("https://{domain}{path}{query}");
    let mut events = Vec::new();
    if m.opens {
        let mut view = json!({"type": LineType::Pageview, "pageviewId": pv, "url": url});
        if let Some(r) = referrer {
            view["referrer"] = json!(r);
        }
        events.push(view);
        if m.page == 0 {
            let h = mix(site, m.slot, m.visit);
            events.push(json!({"type": LineType::Vitals, "pageviewId": pv, "lcp": 900 + h % 2_500,
                "inp": 40 + (h >> 12) % 300, "fcp": 500 + (h >> 20) % 1_500, "ttfb": 100 + (h >> 28) % 600}));
        }
        let next = journey(site, m.slot, m.visit).get(m.page + 1).copied();
        if path.starts_with("/p/") && next == Some("/carrinho") {
            events.push(json!({"type": LineType::Event, "name": "add_to_cart", "url": url,
                "properties": {"sku": path.trim_start_matches("/p/"), "qty": 1}}));
        }
        if path == "/checkout" {
            events.push(json!({"type": LineType::Event, "name": "begin_checkout", "url": url}));
        }
    } else {
        events.push(json!({"type": LineType::Engagement, "pageviewId": pv, "engagedMs": TICK_MS}));
    }
    let body = json!({"siteId": site_id, "visitorId": format!("v_live_{}_{}", m.slot, m.visit),
        "language": "pt-BR", "events": events});
    (body, url)
}

/// The visitor's address, from the documentation ranges (never a real
/// client's): one per slot and visit, so a cookieless site tells them apart.
fn address(site: usize, m: &Move) -> IpAddr {
    let host = 1 + (m.slot * 80 + m.visit % 80) as u8;
    IpAddr::V4(if site == 0 { Ipv4Addr::new(192, 0, 2, host) } else { Ipv4Addr::new(198, 51, 100, host) })
}

/// One round: every demo site's visitors' batches for `tick`, through the
/// tracker's ingestion as a browser's would go. Answers the events accepted.
pub async fn step(cx: &Context, tick: u64) -> Result<usize> {
    round(cx, tick, false).await
}

/// The generator's first round ([`step`] with every visitor opening the page
/// it is on), so that the later rounds' engagement finds its pageview.
pub async fn first_step(cx: &Context, tick: u64) -> Result<usize> {
    round(cx, tick, true).await
}

async fn round(cx: &Context, tick: u64, first: bool) -> Result<usize> {
    let mut accepted = 0;
    for (site, (site_id, _, domain)) in DEMO_SITES.iter().enumerate() {
        let origin = format!("https://{domain}");
        for m in moves(site, tick, first) {
            let (body, url) = batch(site, site_id, domain, &m);
            let body = body.to_string();
            let ua = UAS[(mix(site, m.slot, m.visit) % UAS.len() as u64) as usize];
            let request = Request {
                body: body.as_bytes(),
                ip: address(site, &m),
                user_agent: ua,
                origin: Some(&origin),
                referer: Some(&url),
            };
            accepted += ingest::ingest(cx, request).await.map_err(|r| r.error)?.accepted;
        }
    }
    Ok(accepted)
}

/// What `rastrod demo` runs beside the daemon: a round every [`TICK`] on the
/// system clock until the task is dropped. A failed round is logged and the
/// next one tried.
pub async fn run(cx: Context) {
    let mut every = tokio::time::interval(TICK);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = None;
    loop {
        every.tick().await;
        // The tick from the clock, not a count: a timer firing twice in one
        // period would otherwise send its pageviews again.
        let tick = u64::try_from(cx.now() / TICK_MS).unwrap_or_default();
        if last == Some(tick) {
            continue;
        }
        // After a gap (the first round, a late timer) a page may have opened
        // unseen: its visitors open it again rather than engage with nothing.
        let gap = last.is_none_or(|l: u64| tick != l + 1);
        let done = if gap { first_step(&cx, tick).await } else { step(&cx, tick).await };
        last = Some(tick);
        if let Err(e) = done {
            tracing::warn!(code = e.code.as_str(), "demo traffic: a round failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journeys_walk_the_demo_pages_and_ids_pass_the_tracker_checks() {
        for j in JOURNEYS {
            assert!((3..=5).contains(&j.len()) && j.len() as u64 * PAGE_TICKS < PERIOD);
            assert!(j.iter().all(|p| super::super::analytics::PATHS.contains(p)), "{j:?}");
        }
        use crate::service::analytics::ingest::batch::{check_event, is_pageview_id, is_visitor_id};
        for tick in [0, 1, 7, 123_456_789] {
            for site in 0..2 {
                for m in moves(site, tick, tick == 7) {
                    let (body, _) = batch(site, "loja-x", "lojax.example.com", &m);
                    assert!(is_visitor_id(body["visitorId"].as_str().unwrap()));
                    for e in body["events"].as_array().unwrap() {
                        assert!(check_event(e).is_some(), "{e}");
                        if let Some(pv) = e["pageviewId"].as_str() {
                            assert!(is_pageview_id(pv), "{pv}");
                        }
                    }
                }
            }
        }
    }

    // rule: FAKE-09
    #[test]
    fn three_to_six_visitors_are_live_on_each_site_once_a_period_has_passed_and_none_is_refused() {
        // The live window is five minutes: 20 ticks. A visitor is live from
        // its first pageview until 20 ticks after its last move; counted
        // both ways (last pageview, last engagement), the count stays in range.
        let window = 20;
        for site in 0..2 {
            let start = 1_000_000 + site as u64 * 7;
            let mut last_view: std::collections::HashMap<(u64, u64), u64> = Default::default();
            let mut last_move = last_view.clone();
            let mut opened = std::collections::HashSet::new();
            for tick in start..start + 500 {
                let moves = moves(site, tick, tick == start);
                assert!(!moves.is_empty(), "someone is on the site at every tick");
                for m in moves {
                    if m.opens {
                        last_view.insert((m.slot, m.visit), tick);
                        assert!(opened.insert((m.slot, m.visit, m.page)), "a page opens once");
                    } else {
                        assert!(opened.contains(&(m.slot, m.visit, m.page)), "engagement of an opened page");
                    }
                    last_move.insert((m.slot, m.visit), tick);
                }
                if tick < start + PERIOD {
                    continue;
                }
                let live = |seen: &std::collections::HashMap<(u64, u64), u64>| {
                    seen.values().filter(|&&t| tick - t <= window).count()
                };
                assert!(live(&last_view) >= 3, "tick {tick}: {}", live(&last_view));
                assert!(live(&last_move) <= 6, "tick {tick}: {}", live(&last_move));
            }
        }
    }
}
