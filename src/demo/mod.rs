//! `rastrod demo`: a ready-to-read dataset written through the same service
//! functions the host API calls. Deterministic and idempotent: running it
//! again adds nothing. Two sites (Loja X and Pet Mania), a board, and leads of
//! the last 30 days from ads and from organic origins, some qualified and won:
//! each ad's sales worth a set return on its spend, one band per ad (FAKE-07),
//! and the recent moves of Loja X sent to its pixel (FAKE-08). While the demo
//! serves, `traffic` keeps a few visitors on each site (FAKE-09).

pub mod analytics;
pub mod lead_ads;
pub mod traffic;
pub mod whatsapp;

use crate::clock::{DAY_MS, HOUR_MS, utc_day_start};
use crate::error::{Code, Result};
use crate::service::context::Context;
use crate::service::leads::board::{self as pipeline, ColumnInput, SetPipeline};
use crate::service::leads::{self, RecordLead, SetLeadStage, Stage};
use crate::service::sites::{self, CreateSite};

/// The demo's secrets key when `RASTRO_SECRETS_KEY` is not set: made once and
/// kept in the data folder (mode 0600), so tokens sealed by an earlier demo run
/// still open.
pub fn secrets_key(data_dir: &std::path::Path) -> Result<crate::config::Secret> {
    let path = data_dir.join("demo-secrets.key");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        return Ok(crate::config::Secret::new(existing.trim()));
    }
    std::fs::create_dir_all(data_dir).map_err(crate::error::Error::internal)?;
    let key = crate::ids::secrets_key()?;
    std::fs::write(&path, &key).map_err(crate::error::Error::internal)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    }
    tracing::info!(path = %path.display(), "demo secrets key (RASTRO_SECRETS_KEY was not set)");
    Ok(crate::config::Secret::new(key))
}

/// The sample's ads: (campaign, ad set, ad) ids and names per site.
pub const DEMO_ADS: &[(&str, &str, &str, &str, &str, &str, &str)] = &[
    (
        "loja-x",
        "120200000000000101",
        "Black Friday",
        "120200000000000201",
        "Mulheres 25-45",
        "120200000000000301",
        "Vídeo oferta",
    ),
    (
        "loja-x",
        "120200000000000101",
        "Black Friday",
        "120200000000000201",
        "Mulheres 25-45",
        "120200000000000302",
        "Carrossel vitrine",
    ),
    (
        "loja-x",
        "120200000000000102",
        "Sempre ativo",
        "120200000000000202",
        "Remarketing",
        "120200000000000303",
        "Imagem frete grátis",
    ),
    (
        "pet-mania",
        "120200000000000103",
        "Banho e tosa",
        "120200000000000203",
        "Bairro",
        "120200000000000304",
        "Vídeo antes e depois",
    ),
    (
        "pet-mania",
        "120200000000000103",
        "Banho e tosa",
        "120200000000000203",
        "Bairro",
        "120200000000000305",
        "Imagem pacote mensal",
    ),
];

/// The demo's two sites: id, name and the domain their pages (and tracker) are on.
pub const DEMO_SITES: [(&str, &str, &str); 2] =
    [("loja-x", "Loja X", "lojax.example.com"), ("pet-mania", "Pet Mania", "petmania.example.com")];

/// The return on spend each demo ad is seeded to reach over the demo's 30
/// days, in tenths (140 = 14x): the three bands side by side (rule FAKE-07),
/// each aimed well inside its band so that a day of spend more or less in
/// the range read never moves an ad to another band. The campaigns follow:
/// Black Friday forte (about 10x, its two ads spend alike), Banho e tosa ok
/// (6x) and Sempre ativo fraco (2x, less with its paused ad's spend).
const RETURN_TARGETS: [(&str, i64); 5] = [
    ("120200000000000301", 140), // Vídeo oferta: forte (from 8x)
    ("120200000000000302", 60),  // Carrossel vitrine: ok (4x to 8x)
    ("120200000000000303", 20),  // Imagem frete grátis: fraco (under 4x)
    ("120200000000000304", 60),  // Vídeo antes e depois: ok
    ("120200000000000305", 60),  // Imagem pacote mensal: ok
];

/// How many days the demo's leads cover, ending yesterday (the reports' default range).
const LEAD_DAYS: i64 = 30;

/// A tiny deterministic generator, so the demo is the same on every machine.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

type DemoAd = (&'static str, &'static str, &'static str, &'static str, &'static str, &'static str, &'static str);

/// One lead of the demo, drawn before anything is written: the sales'
/// values depend on every lead of their ad.
struct Planned {
    day: i64,
    n: u64,
    at: i64,
    site: &'static str,
    ad: Option<DemoAd>,
    origin: &'static str,
    /// Under 45 the lead is qualified; under 18 it is also won.
    roll: u64,
    /// A won lead's weight among its ad's sales (an organic sale's value).
    sale: i64,
}

impl Planned {
    fn key(&self) -> String {
        format!("demo-{:02}-{:02}", self.day, self.n)
    }
    fn won(&self) -> bool {
        self.roll < 18
    }
}

/// The demo's leads, in the order they are written (the generator's draws
/// are those of every earlier demo, so the same leads come out).
fn plan(now: i64) -> Vec<Planned> {
    let last_day = utc_day_start(now) - DAY_MS;
    let mut rng = Lcg(0x5eed);
    let mut out = Vec::new();
    for day in 0..LEAD_DAYS {
        let day_start = last_day - (LEAD_DAYS - 1 - day) * DAY_MS;
        let per_day = 6 + rng.below(10);
        for n in 0..per_day {
            let at = day_start + 9 * HOUR_MS + (rng.below(12 * 60) as i64) * 60_000;
            let paid = rng.below(10) < 7;
            let (site, ad) = if paid {
                let ad = DEMO_ADS[rng.below(DEMO_ADS.len() as u64) as usize];
                (ad.0, Some(ad))
            } else {
                (if rng.below(2) == 0 { "loja-x" } else { "pet-mania" }, None)
            };
            let origin = if paid {
                "ctwa_ad"
            } else if rng.below(2) == 0 {
                "organic_whatsapp"
            } else {
                "instagram_bio"
            };
            let roll = rng.below(100);
            let sale = if roll < 18 { 9_990 + (rng.below(40) as i64) * 1_000 } else { 0 };
            out.push(Planned { day, n, at, site, ad, origin, roll, sale });
        }
    }
    out
}

/// The fake sample's token for the demo whose last day is the day before
/// `now` (UTC): the sample's last day moved to it.
fn sample_token(now: i64) -> String {
    let yesterday = chrono::DateTime::from_timestamp_millis(now - DAY_MS).unwrap_or_default().date_naive();
    crate::meta::fake::sample_token_for_last_day(yesterday)
}

/// What an ad spends over the demo's days as the synced reports show them:
/// the fake's sample on the served dates (the ad account's) ending yesterday.
fn ad_spend_cents(ad_id: &str, now: i64) -> i64 {
    use crate::meta::fake::{sample_spend_shifted, token_shift};
    let shift = token_shift(&sample_token(now)).unwrap_or(0);
    let yesterday = chrono::DateTime::from_timestamp_millis(now - DAY_MS).unwrap_or_default().date_naive();
    (0..LEAD_DAYS)
        .filter_map(|k| sample_spend_shifted(ad_id, yesterday - chrono::Duration::days(k), shift))
        .map(|(cents, _, _)| cents)
        .sum()
}

/// Each won lead's sale value, by its place in `plan`: an ad's sales share
/// its target return times its spend by their weights (the last takes the
/// rounding); an organic sale keeps its own value.
fn sale_values(plan: &[Planned], now: i64) -> Vec<Option<i64>> {
    let mut values: Vec<Option<i64>> = plan.iter().map(|p| p.won().then_some(p.sale)).collect();
    for (ad_id, tenths) in RETURN_TARGETS {
        let won: Vec<usize> =
            (0..plan.len()).filter(|&i| plan[i].won() && plan[i].ad.is_some_and(|a| a.5 == ad_id)).collect();
        let weights: i64 = won.iter().map(|&i| plan[i].sale).sum();
        let revenue = ad_spend_cents(ad_id, now) * tenths / 10;
        if won.is_empty() || revenue <= 0 {
            continue;
        }
        let mut left = revenue;
        for (k, &i) in won.iter().enumerate() {
            let value = if k + 1 == won.len() { left } else { revenue * plan[i].sale / weights };
            left -= value;
            values[i] = Some(value);
        }
    }
    values
}

/// The contact a host sends with a lead's move (`meta`, SHA-256 digests of a
/// made-up phone and contact id), only for a move the Conversions API still
/// takes: an older one would be queued just to fail as too old (rule FAKE-08).
fn contact(cx: &Context, now: i64, p: &Planned, at: i64) -> Option<serde_json::Value> {
    let window = i64::try_from(cx.config.capi_max_age.as_millis()).unwrap_or(i64::MAX);
    if at < now.saturating_sub(window) + DAY_MS {
        return None;
    }
    let sha = |s: String| -> String {
        use sha2::{Digest, Sha256};
        Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    };
    let phone = format!("55119{:08}", p.day * 100 + p.n as i64);
    Some(serde_json::json!({"ph": [sha(phone)], "externalId": sha(p.key())}))
}

/// The demo's sites and their board (idempotent).
pub async fn sites(cx: &Context, now: i64) -> Result<()> {
    for (id, name, domain) in DEMO_SITES {
        let input = CreateSite {
            site_id: id.into(),
            name: name.into(),
            currency: "BRL".into(),
            timezone: "America/Sao_Paulo".into(),
            owner_id: "demo-owner".into(),
            domains: Some(vec![domain.into()]),
            // The demo's second site runs web analytics without identifiers.
            cookieless: Some(id == "pet-mania"),
        };
        match cx.write_plain(move |c| sites::create(c, now, input)).await {
            Ok(_) => {}
            Err(e) if e.code == Code::Conflict => {}
            Err(e) => return Err(e),
        }
        let board = SetPipeline {
            columns: vec![
                ColumnInput {
                    key: "novo".into(),
                    name: "Novo lead".into(),
                    color: None,
                    group: Some("Prospecção".into()),
                },
                ColumnInput {
                    key: "conversa".into(),
                    name: "Em conversa".into(),
                    color: None,
                    group: Some("Prospecção".into()),
                },
                ColumnInput {
                    key: "agendado".into(),
                    name: "Agendado".into(),
                    color: Some("#f97316".into()),
                    group: Some("Hora do Show".into()),
                },
                ColumnInput {
                    key: "fechado".into(),
                    name: "Fechado".into(),
                    color: Some("#16a34a".into()),
                    group: Some("Hora do Show".into()),
                },
            ],
        };
        cx.write_plain(move |c| pipeline::set_pipeline(c, id, board)).await?;
    }
    Ok(())
}

/// Seeds the demo whose last day is the day before `now`. Returns the leads written.
///
/// The ads' sales are worth their target return on the ad's spend over
/// these days (rule FAKE-07). Moves the Conversions API still takes carry
/// the contact's hashes, so with Loja X's pixel set first (see [`run`])
/// they queue their conversions as a host's would (rule FAKE-08).
pub async fn seed(cx: &Context, now: i64) -> Result<usize> {
    sites(cx, now).await?;
    let plan = plan(now);
    let values = sale_values(&plan, now);
    let mut written = 0;
    for (p, value) in plan.iter().zip(values) {
        let (site, ad, lead_key) = (p.site, p.ad, p.key());
        let input = RecordLead {
            lead_key: lead_key.clone(),
            event_id: format!("{lead_key}-created"),
            occurred_at: p.at,
            label: Some(format!("Contato {}", p.day * 100 + p.n as i64)),
            origin: p.origin.into(),
            campaign_id: ad.map(|a| a.1.into()),
            campaign_name: ad.map(|a| a.2.into()),
            adset_id: ad.map(|a| a.3.into()),
            adset_name: ad.map(|a| a.4.into()),
            ad_id: ad.map(|a| a.5.into()),
            ad_name: ad.map(|a| a.6.into()),
            click_id: None,
            column: Some("novo".into()),
            meta: None,
            web_ref: None,
        };
        let answer = cx.write(move |c| leads::record(c, now, site, input)).await?;
        if !answer.created {
            continue;
        }
        written += 1;
        if p.roll < 45 {
            let (key, at) = (lead_key.clone(), p.at + 2 * HOUR_MS);
            let step = SetLeadStage {
                stage: Some(Stage::Qualified),
                column: Some("agendado".into()),
                revenue_cents: None,
                event_id: format!("{lead_key}-qualified"),
                occurred_at: at,
                meta: contact(cx, now, p, at),
            };
            cx.write(move |c| leads::set_stage(c, now, site, &key, step)).await?;
        }
        if let Some(value) = value {
            let (key, at) = (lead_key.clone(), p.at + 5 * HOUR_MS);
            let sale = SetLeadStage {
                stage: Some(Stage::Won),
                column: Some("fechado".into()),
                revenue_cents: Some(value),
                event_id: format!("{lead_key}-won"),
                occurred_at: at,
                meta: contact(cx, now, p, at),
            };
            cx.write(move |c| leads::set_stage(c, now, site, &key, sale)).await?;
        }
    }
    Ok(written)
}

/// The demo's dashboard operator (may configure, acts for the demo agency).
pub const DEMO_OPERATOR: &str = "demo";

/// Creates the demo operator, or gives it a new password: answers the password,
/// which `rastrod demo` prints with the address.
pub async fn operator(cx: &crate::service::context::Context, now: i64) -> Result<crate::config::Secret> {
    use crate::service::operators::{self, AddOperator};
    let password = crate::config::Secret::new(crate::ids::demo_password()?);
    let input = AddOperator {
        name: DEMO_OPERATOR.into(),
        password: password.clone(),
        can_configure: true,
        owner_key: DEMO_OWNER.into(),
    };
    operators::add(cx, now, input).await?;
    Ok(password)
}

/// The demo agency's owner key.
pub const DEMO_OWNER: &str = "demo:agency";

/// What [`run`] seeded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seeded {
    /// Leads written ([`seed`]).
    pub leads: usize,
    /// Web analytics lines stored ([`analytics::seed`]).
    pub events: usize,
    /// Instant-form leads waiting at the fake Meta ([`lead_ads::seed`]), when Lead Ads are on.
    pub forms: Option<usize>,
}

/// Everything `rastrod demo` seeds before it serves, in its order. With the
/// agency, Meta comes first (connected, linked, Loja X's pixel and event map
/// set) so that the leads' recent moves queue real conversions for the
/// pixel's sender (rule FAKE-08); the syncs run after the leads, and the
/// Lead Ads (only while `metaLeads` is on) last.
pub async fn run(st: &crate::state::AppState, now: i64, agency: bool) -> Result<Seeded> {
    if agency {
        connect(st, now).await?;
    }
    let leads = seed(&st.cx, now).await?;
    let events = analytics::seed(&st.cx, now).await?;
    let mut forms = None;
    if agency {
        sync(st).await?;
        // The WhatsApp bridge's path needs the synced catalogue (its ad).
        whatsapp::seed(&st.cx, now).await?;
        if st.cx.config.federation_meta_leads {
            forms = Some(lead_ads::seed(st, DEMO_OWNER, now).await?);
        }
    }
    Ok(Seeded { leads, events, forms })
}

/// Connects the sample agency, links Loja X and Pet Mania and syncs them:
/// [`connect`] then [`sync`]. Called after [`seed`], no conversion is queued
/// for the leads already written.
pub async fn connect_agency(st: &crate::state::AppState, now: i64) -> Result<()> {
    connect(st, now).await?;
    sync(st).await
}

/// Connects the sample agency with the token that moves the sample so its
/// last day is yesterday, links Loja X and Pet Mania to their ad accounts,
/// and sets Loja X's pixel and (on a first run) its event map, "Agendado"
/// sending `QualifiedLead` — through the same service functions as the host
/// API. Makes the demo's sites first: a link needs its site.
pub async fn connect(st: &crate::state::AppState, now: i64) -> Result<()> {
    use crate::service::meta::{connection as meta_connection, links as meta_links};
    sites(&st.cx, now).await?;
    let input = meta_connection::SetMetaConnection {
        access_token: meta_connection::SecretString(crate::config::Secret::new(sample_token(now))),
    };
    meta_connection::set_connection(&st.cx, DEMO_OWNER, input).await?;
    for (site, account) in [("loja-x", "act_1029384756"), ("pet-mania", "act_2038475610")] {
        let link =
            meta_links::LinkAdAccount { owner_key: DEMO_OWNER.into(), ad_account_id: account.into(), only_own: false };
        st.cx.write(move |c| meta_links::link(c, now, site, link)).await?;
    }
    let pixel = meta_links::SetSitePixel {
        pixel_id: "111222333444".into(),
        owner_key: Some(DEMO_OWNER.into()),
        access_token: None,
        enabled: Some(true),
        test_event_code: None,
        send_lead_event: Some(false),
        send_click_ids: None,
        whatsapp_business_account_id: None,
        only_own: false,
    };
    meta_links::set_pixel(&st.cx, "loja-x", pixel).await?;
    st.cx
        .write_plain(move |c| {
            // An operator's own map (from the dashboard, on an earlier run) stays.
            if pipeline::event_map(c, "loja-x", None)?.columns.iter().any(|col| col.event.is_some()) {
                return Ok(());
            }
            let map = pipeline::SetEventMap {
                columns: [("agendado".to_string(), Some(serde_json::json!("QualifiedLead")))].into(),
                send_lead_event: None,
                owner_key: Some(DEMO_OWNER.into()),
            };
            pipeline::set_event_map(c, now, "loja-x", map).map(|_| ())
        })
        .await
}

/// Runs the demo accounts' syncs to the end, so the reports show spend at once.
pub async fn sync(st: &crate::state::AppState) -> Result<()> {
    use crate::service::meta::sync as meta_sync;
    // The links woke the accounts' actors (when they run): a run of theirs in flight answers
    // Busy here, and the demo waits for it (up to a few seconds) before going on.
    for account in ["act_1029384756", "act_2038475610"] {
        let (mut runs, mut waits) = (0, 0);
        while runs < 16 && waits < 200 {
            match meta_sync::run(&st.cx, account).await? {
                meta_sync::Outcome::Synced(_) => runs += 1,
                meta_sync::Outcome::Busy => {
                    waits += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                }
                meta_sync::Outcome::Failed(why) => {
                    tracing::warn!(account, why, "the demo sync failed");
                    break;
                }
                _ => break,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sales of the planned leads whose ad passes `which`, in cents.
    fn revenue_of(plan: &[Planned], values: &[Option<i64>], which: impl Fn(&DemoAd) -> bool) -> i64 {
        plan.iter().zip(values).filter(|(p, _)| p.ad.as_ref().is_some_and(&which)).filter_map(|(_, v)| *v).sum()
    }

    // rule: FAKE-07
    #[test]
    fn each_ad_sells_its_target_return_on_its_spend_on_any_day() {
        // The tests' clock start, and days with other shifts of the sample.
        for now in [1_796_040_000_000, 1_796_040_000_000 + 17 * DAY_MS, 1_796_040_000_000 - 40 * DAY_MS] {
            let plan = plan(now);
            let values = sale_values(&plan, now);
            assert_eq!(values, sale_values(&super::plan(now), now), "deterministic");
            for (ad_id, tenths) in RETURN_TARGETS {
                let revenue = revenue_of(&plan, &values, |a| a.5 == ad_id);
                let spend = ad_spend_cents(ad_id, now);
                assert!(spend > 0 && revenue > 0, "{ad_id} spends and sells");
                assert_eq!(revenue, spend * tenths / 10, "{ad_id}");
            }
            assert!(values.iter().flatten().all(|v| *v > 0));
        }
    }

    // rule: FAKE-07
    #[test]
    fn the_campaigns_stay_in_their_bands_whatever_the_day() {
        use crate::service::leads::metrics::{ReturnBand, return_band};
        let want = [
            ("120200000000000101", ReturnBand::Strong),
            ("120200000000000103", ReturnBand::Ok),
            ("120200000000000102", ReturnBand::Weak),
        ];
        for k in -60..60 {
            let now = 1_796_040_000_000 + k * 5 * DAY_MS;
            let plan = plan(now);
            let values = sale_values(&plan, now);
            for (campaign, band) in want {
                let revenue = revenue_of(&plan, &values, |a| a.1 == campaign);
                // Every ad of the campaign spends, the paused ones too (before their quiet days).
                let spend: i64 = crate::meta::fake::sample_ads()
                    .iter()
                    .filter(|a| a.campaign_id == campaign)
                    .map(|a| ad_spend_cents(a.id, now))
                    .sum();
                let r = revenue as f64 / spend as f64;
                assert_eq!(return_band(Some(r)), Some(band), "{campaign} at day {k}: {r:.2}");
                // Well inside: a tenth more or less spend keeps the band.
                assert_eq!(return_band(Some(r * 1.1)), Some(band), "{campaign} at day {k}: {r:.2}");
                assert_eq!(return_band(Some(r / 1.1)), Some(band), "{campaign} at day {k}: {r:.2}");
            }
        }
    }
}
