//! The sample agency: four ad accounts, their catalog (campaigns, ad sets, ads,
//! creatives), their pixels and the spend of every ad day by day. Pure data and
//! pure functions: the same on every machine, no randomness, no clock.
//!
//! # Dates
//!
//! The sample is written on *canonical* dates: 150 days ending on
//! [`SAMPLE_LAST_DAY`] (2026-11-29). [`sample_spend`] answers on those dates.
//! The fake serves them moved by a whole number of days, the *shift*:
//!
//! * a token containing `rastro-fake-sample-token:<days>` (see [`token_shift`])
//!   shifts every date by exactly `<days>` days, positive = later: the served
//!   date `D` shows the canonical date `D - days`, so the served sample's last
//!   day is `SAMPLE_LAST_DAY + days` in every account. `…:0` serves the
//!   canonical dates, whose last day is the day before the tests' clock start
//!   (2026-11-30T12:00Z); [`sample_token_for_last_day`] builds the token that
//!   makes a given day the last one (what `rastrod demo` uses for "yesterday").
//! * any other token uses the default shift: the sample's last day is
//!   yesterday in each account's own timezone, as of the fake's clock when it
//!   started ([`default_shift_days`]). Accounts in different timezones may then
//!   have shifts one day apart.
//!
//! Dates are the ad account's local dates, as Meta's insights are.

use chrono::{Datelike, NaiveDate, TimeZone, Utc};

/// The canonical last day of the sample (see the module doc).
pub const SAMPLE_LAST_DAY: NaiveDate = match NaiveDate::from_ymd_opt(2026, 11, 29) {
    Some(d) => d,
    None => panic!("bad SAMPLE_LAST_DAY"),
};
/// How many days of spend the sample holds, ending on its last day.
pub const SAMPLE_DAYS: i64 = 150;
/// The token prefix that pins the date shift: `rastro-fake-sample-token:<days>`.
pub const SAMPLE_TOKEN_PREFIX: &str = "rastro-fake-sample-token:";
/// A PAUSED ad has no delivery over the sample's last days.
pub const PAUSED_QUIET_DAYS: i64 = 14;

/// One ad account of the sample agency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleAccount {
    /// `act_<digits>`, as Graph names it.
    pub id: &'static str,
    /// The digits alone (`account_id` in Graph).
    pub account_id: &'static str,
    pub name: &'static str,
    pub currency: &'static str,
    pub timezone: &'static str,
}

/// One ad with its place in the catalog and its creative.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleAd {
    pub account: &'static str,
    pub campaign_id: &'static str,
    pub campaign_name: &'static str,
    pub adset_id: &'static str,
    pub adset_name: &'static str,
    pub id: &'static str,
    pub name: &'static str,
    /// `ACTIVE` or `PAUSED`.
    pub effective_status: &'static str,
    /// Graph's creative `object_type`: `VIDEO`, `PHOTO`, `SHARE` (carousel/link), `STATUS`.
    pub object_type: &'static str,
    pub creative_id: &'static str,
}

/// A pixel (dataset) and the account that lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplePixel {
    pub id: &'static str,
    pub name: &'static str,
    pub account: &'static str,
}

/// The Graph user behind every fake token.
pub const SAMPLE_USER_ID: &str = "10001";
pub const SAMPLE_USER_NAME: &str = "Gestora Fake";
/// The business the usage headers speak for.
pub const SAMPLE_BUSINESS_ID: &str = "1000200030004000";

pub const LOJA_X: &str = "act_1029384756";
pub const PET_MANIA: &str = "act_2038475610";
pub const CAFE_BROOKLYN: &str = "act_3047586921";
pub const CASA_LISBOA: &str = "act_4056789132";

const ACCOUNTS: [SampleAccount; 4] = [
    SampleAccount {
        id: LOJA_X,
        account_id: "1029384756",
        name: "Agência Rastro — Loja X",
        currency: "BRL",
        timezone: "America/Sao_Paulo",
    },
    SampleAccount {
        id: PET_MANIA,
        account_id: "2038475610",
        name: "Agência Rastro — Pet Mania",
        currency: "BRL",
        timezone: "America/Manaus",
    },
    SampleAccount {
        id: CAFE_BROOKLYN,
        account_id: "3047586921",
        name: "Agência Rastro — Café Brooklyn",
        currency: "USD",
        timezone: "America/New_York",
    },
    SampleAccount {
        id: CASA_LISBOA,
        account_id: "4056789132",
        name: "Agência Rastro — Casa Lisboa",
        currency: "EUR",
        timezone: "Europe/Lisbon",
    },
];

const PIXELS: [SamplePixel; 2] = [
    SamplePixel { id: "111222333444", name: "Pixel Loja X", account: LOJA_X },
    SamplePixel { id: "222333444555", name: "Pixel Pet Mania", account: PET_MANIA },
];

#[allow(clippy::too_many_arguments)]
const fn ad(
    account: &'static str,
    campaign_id: &'static str,
    campaign_name: &'static str,
    adset_id: &'static str,
    adset_name: &'static str,
    id: &'static str,
    name: &'static str,
    effective_status: &'static str,
    object_type: &'static str,
    creative_id: &'static str,
) -> SampleAd {
    SampleAd {
        account,
        campaign_id,
        campaign_name,
        adset_id,
        adset_name,
        id,
        name,
        effective_status,
        object_type,
        creative_id,
    }
}

const C101: (&str, &str) = ("120200000000000101", "Black Friday");
const C102: (&str, &str) = ("120200000000000102", "Sempre ativo");
const C103: (&str, &str) = ("120200000000000103", "Banho e tosa");
const C104: (&str, &str) = ("120200000000000104", "Coleção verão");
const C105: (&str, &str) = ("120200000000000105", "Ração premium");
const C106: (&str, &str) = ("120200000000000106", "Weekend brunch");
const C107: (&str, &str) = ("120200000000000107", "Office catering");
const C108: (&str, &str) = ("120200000000000108", "Alojamento verão");
const C109: (&str, &str) = ("120200000000000109", "Reservas diretas");

/// The catalog, ordered by account then ad id. The first five are the demo's
/// ads (`crate::demo::DEMO_ADS`): same ids and names.
const ADS: [SampleAd; 17] = [
    // Loja X (BRL, America/Sao_Paulo)
    ad(
        LOJA_X,
        C101.0,
        C101.1,
        "120200000000000201",
        "Mulheres 25-45",
        "120200000000000301",
        "Vídeo oferta",
        "ACTIVE",
        "VIDEO",
        "120200000000000401",
    ),
    ad(
        LOJA_X,
        C101.0,
        C101.1,
        "120200000000000201",
        "Mulheres 25-45",
        "120200000000000302",
        "Carrossel vitrine",
        "ACTIVE",
        "SHARE",
        "120200000000000402",
    ),
    ad(
        LOJA_X,
        C102.0,
        C102.1,
        "120200000000000202",
        "Remarketing",
        "120200000000000303",
        "Imagem frete grátis",
        "ACTIVE",
        "PHOTO",
        "120200000000000403",
    ),
    ad(
        LOJA_X,
        C102.0,
        C102.1,
        "120200000000000202",
        "Remarketing",
        "120200000000000306",
        "Vídeo depoimento",
        "PAUSED",
        "VIDEO",
        "120200000000000406",
    ),
    ad(
        LOJA_X,
        C104.0,
        C104.1,
        "120200000000000204",
        "Lookalike compradores",
        "120200000000000307",
        "Carrossel coleção",
        "ACTIVE",
        "SHARE",
        "120200000000000407",
    ),
    ad(
        LOJA_X,
        C104.0,
        C104.1,
        "120200000000000204",
        "Lookalike compradores",
        "120200000000000308",
        "Imagem modelo praia",
        "PAUSED",
        "PHOTO",
        "120200000000000408",
    ),
    // Pet Mania (BRL, America/Manaus)
    ad(
        PET_MANIA,
        C103.0,
        C103.1,
        "120200000000000203",
        "Bairro",
        "120200000000000304",
        "Vídeo antes e depois",
        "ACTIVE",
        "VIDEO",
        "120200000000000404",
    ),
    ad(
        PET_MANIA,
        C103.0,
        C103.1,
        "120200000000000203",
        "Bairro",
        "120200000000000305",
        "Imagem pacote mensal",
        "ACTIVE",
        "PHOTO",
        "120200000000000405",
    ),
    ad(
        PET_MANIA,
        C105.0,
        C105.1,
        "120200000000000205",
        "Donos de cães",
        "120200000000000309",
        "Vídeo entrega rápida",
        "ACTIVE",
        "VIDEO",
        "120200000000000409",
    ),
    ad(
        PET_MANIA,
        C105.0,
        C105.1,
        "120200000000000205",
        "Donos de cães",
        "120200000000000310",
        "Carrossel marcas",
        "PAUSED",
        "SHARE",
        "120200000000000410",
    ),
    // Café Brooklyn (USD, America/New_York)
    ad(
        CAFE_BROOKLYN,
        C106.0,
        C106.1,
        "120200000000000206",
        "Brooklyn 21-40",
        "120200000000000311",
        "Latte art video",
        "ACTIVE",
        "VIDEO",
        "120200000000000411",
    ),
    ad(
        CAFE_BROOKLYN,
        C106.0,
        C106.1,
        "120200000000000206",
        "Brooklyn 21-40",
        "120200000000000312",
        "Brunch menu photo",
        "ACTIVE",
        "PHOTO",
        "120200000000000412",
    ),
    ad(
        CAFE_BROOKLYN,
        C107.0,
        C107.1,
        "120200000000000207",
        "Offices Manhattan",
        "120200000000000313",
        "Catering carousel",
        "PAUSED",
        "SHARE",
        "120200000000000413",
    ),
    // Casa Lisboa (EUR, Europe/Lisbon)
    ad(
        CASA_LISBOA,
        C108.0,
        C108.1,
        "120200000000000208",
        "Turistas Brasil",
        "120200000000000314",
        "Vídeo vista rio",
        "ACTIVE",
        "VIDEO",
        "120200000000000414",
    ),
    ad(
        CASA_LISBOA,
        C108.0,
        C108.1,
        "120200000000000208",
        "Turistas Brasil",
        "120200000000000315",
        "Imagem quarto duplo",
        "ACTIVE",
        "PHOTO",
        "120200000000000415",
    ),
    ad(
        CASA_LISBOA,
        C109.0,
        C109.1,
        "120200000000000209",
        "Remarketing site",
        "120200000000000316",
        "Carrossel quartos",
        "ACTIVE",
        "SHARE",
        "120200000000000416",
    ),
    ad(
        CASA_LISBOA,
        C109.0,
        C109.1,
        "120200000000000209",
        "Remarketing site",
        "120200000000000317",
        "Publicação institucional",
        "PAUSED",
        "STATUS",
        "120200000000000417",
    ),
];

/// The four ad accounts, in the order `/me/adaccounts` lists them.
pub fn sample_accounts() -> &'static [SampleAccount] {
    &ACCOUNTS
}

/// Every ad of the sample, ordered by account then ad id.
pub fn sample_ads() -> &'static [SampleAd] {
    &ADS
}

/// The pixels: Loja X's and Pet Mania's.
pub fn sample_pixels() -> &'static [SamplePixel] {
    &PIXELS
}

pub fn account(id: &str) -> Option<&'static SampleAccount> {
    ACCOUNTS.iter().find(|a| a.id == id)
}

pub fn ad_by_id(id: &str) -> Option<&'static SampleAd> {
    ADS.iter().find(|a| a.id == id)
}

pub fn pixel(id: &str) -> Option<&'static SamplePixel> {
    PIXELS.iter().find(|p| p.id == id)
}

pub fn account_ads(account: &str) -> impl Iterator<Item = &'static SampleAd> + '_ {
    ADS.iter().filter(move |a| a.account == account)
}

/// FNV-1a: a stable hash of a string (Rust's `DefaultHasher` is not promised stable).
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64: the fixed-seed generator behind every number of the sample.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The spend of one ad on one CANONICAL date (see the module doc):
/// `Some((spend in cents of the account's currency, impressions, clicks))`, or
/// `None` when the ad had no delivery that day (Meta lists no row), the date is
/// outside the sample's 150 days, or the ad is unknown. A row that exists always
/// has a spend of at least one cent.
pub fn sample_spend(ad_id: &str, date: NaiveDate) -> Option<(i64, i64, i64)> {
    let ad = ad_by_id(ad_id)?;
    let days_back = (SAMPLE_LAST_DAY - date).num_days();
    if !(0..SAMPLE_DAYS).contains(&days_back) {
        return None;
    }
    if ad.effective_status == "PAUSED" && days_back < PAUSED_QUIET_DAYS {
        return None;
    }
    let seed = fnv1a(ad_id);
    let day = i64::from(date.num_days_from_ce()) as u64;
    let h = splitmix(seed ^ day.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    // About one day in eleven without delivery.
    if h.is_multiple_of(11) {
        return None;
    }
    let budget_cents = 2_000 + (splitmix(seed) % 13_000) as i64; // 20.00 ..= 149.99 a day
    let weekday = date.weekday().num_days_from_monday();
    let weekend_pct = if weekday >= 5 { 80 } else { 100 };
    let noise_pct = 55 + ((h >> 8) % 91) as i64; // 55% ..= 145%
    let spend = (budget_cents * noise_pct * weekend_pct / 10_000).max(1);
    let cpm_cents = 1_500 + (splitmix(seed ^ 1) % 3_000) as i64; // cost per thousand impressions
    let impressions = (spend * 1_000 / cpm_cents).max(1);
    let ctr_per_10k = 40 + ((h >> 24) % 260) as i64; // 0.4% ..= 3%
    let clicks = impressions * ctr_per_10k / 10_000;
    Some((spend, impressions, clicks))
}

/// [`sample_spend`] on a SERVED date under a shift: the served date `date`
/// shows the canonical date `date - shift_days`.
pub fn sample_spend_shifted(ad_id: &str, date: NaiveDate, shift_days: i64) -> Option<(i64, i64, i64)> {
    sample_spend(ad_id, date - chrono::Duration::days(shift_days))
}

/// The shift a token pins: `Some(days)` when it contains
/// `rastro-fake-sample-token:<days>` (an optional sign and digits), else `None`
/// (the default shift applies).
pub fn token_shift(token: &str) -> Option<i64> {
    let at = token.find(SAMPLE_TOKEN_PREFIX)?;
    let rest = &token[at + SAMPLE_TOKEN_PREFIX.len()..];
    let end = rest
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(rest.len(), |(i, _)| i);
    rest[..end].parse().ok()
}

/// The token whose shift makes `last_day` the served sample's last day.
pub fn sample_token_for_last_day(last_day: NaiveDate) -> String {
    format!("{SAMPLE_TOKEN_PREFIX}{}", (last_day - SAMPLE_LAST_DAY).num_days())
}

/// The local date of `now_ms` in `timezone` (UTC for an unknown zone).
pub fn local_date(timezone: &str, now_ms: i64) -> NaiveDate {
    let utc = Utc.timestamp_millis_opt(now_ms).single().unwrap_or_default();
    match timezone.parse::<chrono_tz::Tz>() {
        Ok(tz) => utc.with_timezone(&tz).date_naive(),
        Err(_) => utc.date_naive(),
    }
}

/// The default shift of an account: its served last day is yesterday in its
/// timezone as of `now_ms`.
pub fn default_shift_days(timezone: &str, now_ms: i64) -> i64 {
    let yesterday = local_date(timezone, now_ms) - chrono::Duration::days(1);
    (yesterday - SAMPLE_LAST_DAY).num_days()
}

/// Cents as Graph's decimal string: 12345 → "123.45".
pub fn cents_to_decimal(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.unsigned_abs();
    format!("{sign}{}.{:02}", c / 100, c % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn four_accounts_two_currencies_distinct_timezones() {
        let a = sample_accounts();
        assert_eq!(a.len(), 4);
        assert_eq!(a[0].id, "act_1029384756");
        let mut cur: Vec<_> = a.iter().map(|x| x.currency).collect();
        cur.sort();
        cur.dedup();
        assert!(cur.len() >= 2);
        let mut tz: Vec<_> = a.iter().map(|x| x.timezone).collect();
        tz.sort();
        tz.dedup();
        assert_eq!(tz.len(), 4);
        for x in a {
            assert!(x.timezone.parse::<chrono_tz::Tz>().is_ok());
            assert_eq!(x.id, format!("act_{}", x.account_id));
            assert!(account_ads(x.id).count() >= 3);
        }
    }

    #[test]
    fn demo_ads_match() {
        for (site, campaign, cname, adset, aname, id, name) in crate::demo::DEMO_ADS {
            let ad = ad_by_id(id).unwrap();
            assert_eq!(
                (ad.campaign_id, ad.campaign_name, ad.adset_id, ad.adset_name, ad.name),
                (*campaign, *cname, *adset, *aname, *name)
            );
            let acct = if *site == "loja-x" { LOJA_X } else { PET_MANIA };
            assert_eq!(ad.account, acct);
        }
        let mut ids: Vec<_> = ADS.iter().map(|a| a.id).collect();
        ids.dedup();
        assert_eq!(ids.len(), ADS.len(), "ads ordered and unique");
    }

    #[test]
    fn spend_is_deterministic_with_gaps() {
        let ad = "120200000000000301";
        assert_eq!(sample_spend(ad, d("2026-11-01")), sample_spend(ad, d("2026-11-01")));
        assert_eq!(sample_spend(ad, d("2026-11-30")), None, "after the last day");
        assert_eq!(sample_spend(ad, d("2026-07-02")), None, "before the first day");
        assert_eq!(sample_spend("999", d("2026-11-01")), None);
        for a in sample_ads() {
            let rows: Vec<_> = (0..SAMPLE_DAYS)
                .filter_map(|k| sample_spend(a.id, SAMPLE_LAST_DAY - chrono::Duration::days(k)))
                .collect();
            assert!(rows.len() > 100, "{} delivers most days", a.id);
            assert!(rows.len() < SAMPLE_DAYS as usize, "{} has gaps", a.id);
            assert!(rows.iter().all(|&(s, i, c)| s > 0 && i > 0 && c >= 0 && c <= i));
        }
        assert!(sample_spend("120200000000000306", SAMPLE_LAST_DAY).is_none(), "paused lately");
    }

    #[test]
    fn shifts() {
        assert_eq!(token_shift("rastro-fake-sample-token:5"), Some(5));
        assert_eq!(token_shift("rastro-fake-sample-token:-12"), Some(-12));
        assert_eq!(token_shift("fake-system-token-ab.rastro-fake-sample-token:+3.x"), Some(3));
        assert_eq!(token_shift("rastro-fake-sample-token:"), None);
        assert_eq!(token_shift("anything"), None);
        assert_eq!(sample_token_for_last_day(d("2026-12-01")), "rastro-fake-sample-token:2");
        let ad = "120200000000000303";
        assert_eq!(sample_spend_shifted(ad, d("2026-11-03"), 2), sample_spend(ad, d("2026-11-01")));
        // 2026-11-30T02:00Z: still the 29th in São Paulo, already the 30th in Lisbon.
        let now = 1_796_004_000_000;
        assert_eq!(default_shift_days("America/Sao_Paulo", now), -1);
        assert_eq!(default_shift_days("Europe/Lisbon", now), 0);
    }

    #[test]
    fn decimals() {
        assert_eq!(cents_to_decimal(12345), "123.45");
        assert_eq!(cents_to_decimal(7), "0.07");
        assert_eq!(cents_to_decimal(100), "1.00");
    }
}
