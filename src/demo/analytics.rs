//! The demo's web analytics (rule IMP-10): 90 days ending yesterday for
//! Loja X (cookie mode) and Pet Mania (cookieless), through the import with one
//! fixed `importId` per site and day. A deterministic generator seeded by
//! (site, day) makes each day's body the same on every run, so a second run
//! changes nothing and a run on a later day adds only the new days.

use serde_json::{Value, json};

use crate::clock::{DAY_MS, utc_day_start};
use crate::error::{Code, Result};
use crate::service::analytics::conversions::{self, RecordConversion};
use crate::service::analytics::definitions::{self, Matcher, Step, UpsertAffiliate, UpsertFunnel, UpsertGoal};
use crate::service::analytics::ingest::import;
use crate::service::analytics::vocabulary::LineType;
use crate::service::context::Context;
use crate::service::sites::UpdateSite;
use crate::store::analytics::definitions as defs_store;

pub const DAYS: i64 = 90;
pub const PATHS: &[&str] = &[
    "/",
    "/",
    "/",
    "/p/1",
    "/p/2",
    "/p/3",
    "/p/4",
    "/p/5",
    "/p/6",
    "/blog/como-escolher",
    "/carrinho",
    "/checkout",
    "/sobre",
    "/contato",
];
pub const UAS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; SM-S921B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
];

/// splitmix64: small, deterministic, good enough for a demo.
pub struct Rng(pub u64);

impl Rng {
    fn new(site: &str, day: i64) -> Rng {
        let mut seed = day as u64 ^ 0x9E37_79B9_7F4A_7C15;
        for b in site.bytes() {
            seed = seed.rotate_left(7) ^ u64::from(b);
        }
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The session's landing attribution: direct, Instagram, Google, a Facebook
/// ad, the affiliate `gio`.
fn attribution(r: &mut Rng) -> Value {
    match r.below(10) {
        0..=2 => json!({}),
        3 => json!({"source": "gio", "medium": "affiliate", "affiliate": "gio"}),
        4..=5 => json!({"source": "ig", "medium": "social", "campaign": "Black Friday"}),
        6..=7 => json!({"referrer": "https://www.google.com/"}),
        _ => json!({"source": "facebook", "medium": "cpc", "campaign": "Ração premium"}),
    }
}

/// One day's lines for a site.
fn day_lines(site: &str, cookieless: bool, day: i64) -> Vec<Value> {
    let mut r = Rng::new(site, day);
    let visitors = 20 + r.below(25);
    let mut lines = Vec::new();
    for v in 0..visitors {
        // Cookie mode: a pool of 400 browsers, so some return; cookieless: a new id each day.
        let visitor = if cookieless {
            format!("c_demo{:016x}", (day as u64 / DAY_MS as u64) << 16 | v)
        } else {
            format!("v_demo_{site}_{:04}", r.below(400))
        };
        if lines.iter().any(|l: &Value| l["visitorId"] == visitor.as_str()) {
            continue;
        }
        let ua = UAS[r.below(UAS.len() as u64) as usize];
        let mut t = day + (8 * 3_600_000) + r.below(15 * 3_600_000) as i64;
        let views = 1 + r.below(4);
        let landing = attribution(&mut r);
        for i in 0..views {
            let path = PATHS[r.below(PATHS.len() as u64) as usize];
            let pv = format!("p_demo{:011x}{:05}", (day / DAY_MS) as u64 * 100 + v, i);
            let mut line = json!({"type": LineType::Pageview, "occurredAt": t, "visitorId": visitor, "pageviewId": pv,
                "path": path, "userAgent": ua, "language": "pt-BR"});
            if i == 0 {
                for (k, val) in landing.as_object().into_iter().flatten() {
                    line[k] = val.clone();
                }
            }
            lines.push(line);
            let engaged = 3_000 + r.below(90_000) as i64;
            lines.push(json!({"type": LineType::Engagement, "occurredAt": t, "visitorId": visitor, "pageviewId": pv, "engagedMs": engaged}));
            if i == 0 {
                lines.push(json!({"type": LineType::Vitals, "occurredAt": t, "visitorId": visitor, "pageviewId": pv,
                    "lcp": 900 + r.below(3_500), "inp": 40 + r.below(400), "cls": r.below(30) as f64 / 100.0,
                    "fcp": 500 + r.below(2_000), "ttfb": 100 + r.below(900)}));
            }
            if path.starts_with("/p/") && r.below(3) == 0 {
                lines.push(
                    json!({"type": LineType::Event, "occurredAt": t + 5_000, "visitorId": visitor, "name": "add_to_cart",
                    "path": path, "properties": {"sku": path.trim_start_matches("/p/"), "qty": 1 + r.below(3)}}),
                );
            }
            if path == "/checkout" {
                lines.push(json!({"type": LineType::Event, "occurredAt": t + 8_000, "visitorId": visitor, "name": "begin_checkout", "path": path}));
            }
            t += 20_000 + engaged.min(60_000);
        }
    }
    lines
}

/// The goals, the funnel and the affiliate, made once (before the import, so
/// its events complete them).
fn definitions(c: &mut crate::db::AnyConnection, now: i64, site: &str) -> Result<()> {
    let goals = defs_store::goals(c, site, false)?;
    let goal = |key: &str, name: &str, matcher: Matcher, value_cents: Option<i64>| UpsertGoal {
        site_id: site.to_string(),
        goal_id: None,
        key: key.to_string(),
        name: name.to_string(),
        matcher,
        value_cents,
        active: None,
    };
    for g in [
        goal("checkout", "Checkout", Matcher::Pageview { path: "/checkout".into() }, Some(15_000)),
        goal("carrinho", "Adicionou ao carrinho", Matcher::Event { name: "add_to_cart".into() }, None),
    ] {
        if !goals.iter().any(|x| x.key == g.key) {
            definitions::upsert_goal(c, now, g)?;
        }
    }
    if !defs_store::funnels(c, site)?.iter().any(|f| f.key == "compra") {
        let step = |label: &str, matcher: Matcher| Step { label: label.to_string(), matcher };
        let funnel = UpsertFunnel {
            site_id: site.to_string(),
            funnel_id: None,
            key: "compra".into(),
            name: "Compra".into(),
            window_ms: 3_600_000,
            steps: vec![
                step("Produto", Matcher::Pageview { path: "/p/:id".into() }),
                step("Carrinho", Matcher::Event { name: "add_to_cart".into() }),
                step("Checkout", Matcher::Pageview { path: "/checkout".into() }),
            ],
        };
        definitions::upsert_funnel(c, now, funnel)?;
    }
    if !defs_store::affiliates(c, site, false)?.iter().any(|a| a.slug == "gio") {
        let gio = UpsertAffiliate {
            site_id: site.to_string(),
            affiliate_id: None,
            slug: "gio".into(),
            name: "Giovana Lima".into(),
            commission_bps: 1_000,
            window_days: 30,
            active: None,
        };
        definitions::upsert_affiliate(c, now, gio)?;
    }
    Ok(())
}

/// A sale for each visit that began a checkout, with a fixed `conversionKey`.
fn sales(site: &str, lines: &[Value]) -> Vec<RecordConversion> {
    lines
        .iter()
        .filter(|l| l["name"] == "begin_checkout")
        .map(|l| {
            let at = l["occurredAt"].as_i64().unwrap_or_default();
            let visitor = l["visitorId"].as_str().unwrap_or_default().to_string();
            RecordConversion {
                conversion_key: format!("demo:{site}:{at}:{visitor}"),
                occurred_at: at + 60_000,
                name: "Pedido".into(),
                value_cents: 4_990 + (at.rem_euclid(20) * 1_000),
                visitor_id: Some(visitor),
                session_id: None,
                properties: None,
            }
        })
        .collect()
}

/// Seeds the 90 days before `now`'s UTC day; answers the lines stored by this run.
pub async fn seed(cx: &Context, now: i64) -> Result<usize> {
    let mut stored = 0;
    for (site, cookieless) in [("loja-x", false), ("pet-mania", true)] {
        // The route pattern first, so the product pages group under /p/:id.
        let input = UpdateSite { route_patterns: Some(vec!["/p/:id".into()]), ..UpdateSite::default() };
        let sid = site.to_string();
        cx.write_plain(move |c| crate::service::analytics::settings::update(c, now, &sid, input)).await?;
        let sid = site.to_string();
        cx.write_plain(move |c| definitions(c, now, &sid)).await?;
        let yesterday = utc_day_start(now) - DAY_MS;
        for d in (0..DAYS).rev() {
            let day = yesterday - d * DAY_MS;
            let lines = day_lines(site, cookieless, day);
            let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let id = format!("demo:{site}:{}", day / DAY_MS);
            match import::import(cx, site, &id, body.as_bytes(), true).await {
                Ok(a) if a.created => {
                    stored += a.accepted;
                    for sale in sales(site, &lines) {
                        let sid = site.to_string();
                        cx.write(move |c| conversions::record_written(c, now, &sid, sale)).await?;
                    }
                }
                Ok(_) => {}
                // A day whose visitors were seen later (an older run's data): leave it.
                Err(e) if e.code == Code::InvalidArgument || e.code == Code::Conflict => {
                    tracing::debug!(site, day, code = e.code.as_str(), "demo day skipped");
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_is_the_same_on_every_run_and_differs_between_days() {
        let d = 20_000 * DAY_MS;
        assert_eq!(day_lines("loja-x", false, d), day_lines("loja-x", false, d));
        assert_ne!(day_lines("loja-x", false, d), day_lines("loja-x", false, d + DAY_MS));
        assert!(day_lines("pet-mania", true, d).iter().all(|l| l["visitorId"].as_str().unwrap().starts_with("c_")));
        assert!(day_lines("loja-x", false, d).len() <= import::MAX_LINES);
    }
}
