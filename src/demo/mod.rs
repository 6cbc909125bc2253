//! `rastrod demo`: a ready-to-read dataset written through the same service
//! functions the host API calls. Deterministic and idempotent: running it
//! again adds nothing. Two sites (Loja X and Pet Mania), a board, and leads of
//! the last 30 days from ads and from organic origins, some qualified and won.

pub mod analytics;
pub mod lead_ads;

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

/// Seeds the demo whose last day is the day before `now`. Returns the leads written.
pub async fn seed(cx: &Context, now: i64) -> Result<usize> {
    let demo_sites = [
        ("loja-x", "Loja X", "BRL", "America/Sao_Paulo", "demo-owner", "lojax.example.com"),
        ("pet-mania", "Pet Mania", "BRL", "America/Sao_Paulo", "demo-owner", "petmania.example.com"),
    ];
    for (id, name, currency, tz, owner, domain) in demo_sites {
        let input = CreateSite {
            site_id: id.into(),
            name: name.into(),
            currency: currency.into(),
            timezone: tz.into(),
            owner_id: owner.into(),
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

    let last_day = utc_day_start(now) - DAY_MS;
    let mut rng = Lcg(0x5eed);
    let mut written = 0;
    for day in 0..30 {
        let day_start = last_day - (29 - day) * DAY_MS;
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
            let lead_key = format!("demo-{day:02}-{n:02}");
            let origin = if paid {
                "ctwa_ad"
            } else if rng.below(2) == 0 {
                "organic_whatsapp"
            } else {
                "instagram_bio"
            };
            let input = RecordLead {
                lead_key: lead_key.clone(),
                event_id: format!("{lead_key}-created"),
                occurred_at: at,
                label: Some(format!("Contato {}", day * 100 + n as i64)),
                origin: origin.into(),
                campaign_id: ad.map(|a| a.1.into()),
                campaign_name: ad.map(|a| a.2.into()),
                adset_id: ad.map(|a| a.3.into()),
                adset_name: ad.map(|a| a.4.into()),
                ad_id: ad.map(|a| a.5.into()),
                ad_name: ad.map(|a| a.6.into()),
                click_id: None,
                column: Some("novo".into()),
                meta: None,
            };
            let answer = cx.write(move |c| leads::record(c, now, site, input)).await?;
            if !answer.created {
                continue;
            }
            written += 1;
            let roll = rng.below(100);
            if roll < 45 {
                let key = lead_key.clone();
                let step = SetLeadStage {
                    stage: Some(Stage::Qualified),
                    column: Some("agendado".into()),
                    revenue_cents: None,
                    event_id: format!("{lead_key}-qualified"),
                    occurred_at: at + 2 * HOUR_MS,
                    meta: None,
                };
                cx.write(move |c| leads::set_stage(c, now, site, &key, step)).await?;
            }
            if roll < 18 {
                let value = 9_990 + (rng.below(40) as i64) * 1_000;
                let key = lead_key.clone();
                let sale = SetLeadStage {
                    stage: Some(Stage::Won),
                    column: Some("fechado".into()),
                    revenue_cents: Some(value),
                    event_id: format!("{lead_key}-won"),
                    occurred_at: at + 5 * HOUR_MS,
                    meta: None,
                };
                cx.write(move |c| leads::set_stage(c, now, site, &key, sale)).await?;
            }
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

/// Connects the sample agency with the token that moves the sample so its last
/// day is yesterday, links Loja X and Pet Mania to their ad accounts, sets Loja
/// X's pixel, and runs their syncs to the end — through the same service
/// functions as the host API, so the reports show spend at once.
pub async fn connect_agency(st: &crate::state::AppState, now: i64) -> Result<()> {
    use crate::service::meta::{connection as meta_connection, links as meta_links, sync as meta_sync};
    let yesterday = chrono::DateTime::from_timestamp_millis(now - DAY_MS).unwrap_or_default().date_naive();
    let token = crate::meta::fake::sample_token_for_last_day(yesterday);
    let input = meta_connection::SetMetaConnection {
        access_token: meta_connection::SecretString(crate::config::Secret::new(token)),
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
        only_own: false,
    };
    meta_links::set_pixel(&st.cx, "loja-x", pixel).await?;
    // The links woke the accounts' actors: a run of theirs in flight answers
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
