//! Argument checks shared by every entry point. Each failure is
//! INVALID_ARGUMENT with a message naming the field, never echoing a value that
//! could be a secret.

use std::collections::HashSet;
use std::str::FromStr;

use crate::clock::{DAY_MS, utc_day_start};
use crate::error::{Error, Result};

/// Most sites in one call (one to ten unique siteIds: LEAD-08, REPORT-01, FED-05).
pub const MAX_SITES: usize = 10;

fn id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-')
}

/// `siteId`: 1–64 characters of `[A-Za-z0-9_.:-]`, but not `.` or `..`
/// (a URL path would resolve them away, so such a site could never be reached).
pub fn site_id(s: &str) -> Result<()> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(id_char) || s == "." || s == ".." {
        return Err(Error::invalid("siteId must be 1-64 characters of [A-Za-z0-9_.:-], not . or .."));
    }
    Ok(())
}

/// A key such as a board column: 1–64 characters of `[A-Za-z0-9_.:-]`.
pub fn key(field: &str, s: &str) -> Result<()> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(id_char) {
        return Err(Error::invalid(format!("{field} must be 1-64 characters of [A-Za-z0-9_.:-]")));
    }
    Ok(())
}

/// Free text with a length bound in characters; no control characters.
pub fn text(field: &str, s: &str, min: usize, max: usize) -> Result<()> {
    let n = s.chars().count();
    if n < min || n > max {
        return Err(Error::invalid(format!("{field} must be {min}-{max} characters")));
    }
    if s.chars().any(|c| c.is_control()) {
        return Err(Error::invalid(format!("{field} must not contain control characters")));
    }
    Ok(())
}

pub fn opt_text(field: &str, s: &Option<String>, max: usize) -> Result<()> {
    match s {
        Some(v) => text(field, v, 1, max),
        None => Ok(()),
    }
}

/// `origin`: 1–64 characters of `[a-z0-9_]`.
pub fn origin(s: &str) -> Result<()> {
    if s.is_empty() || s.len() > 64 || !s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return Err(Error::invalid("origin must be 1-64 characters of [a-z0-9_]"));
    }
    Ok(())
}

/// An epoch-millisecond time between 1970 and 9999.
pub fn time(field: &str, ms: i64) -> Result<()> {
    if !(0..=253_402_300_799_999).contains(&ms) {
        return Err(Error::invalid(format!("{field} must be epoch milliseconds between 1970 and 9999")));
    }
    Ok(())
}

/// Money in integer cents: 0 to 10^13 (a hundred billion in major units).
pub fn cents(field: &str, v: i64) -> Result<()> {
    if !(0..=10_000_000_000_000).contains(&v) {
        return Err(Error::invalid(format!("{field} must be whole cents between 0 and 10000000000000")));
    }
    Ok(())
}

/// 1–10 unique, well-formed site ids.
pub fn site_ids(ids: &[String]) -> Result<()> {
    site_ids_up_to(ids, MAX_SITES)
}

/// 1–`max` unique, well-formed site ids (the dashboard's "all clients" view
/// reads more than the API's ten at once; its reads stay under the row caps).
pub fn site_ids_up_to(ids: &[String], max: usize) -> Result<()> {
    if ids.is_empty() || ids.len() > max {
        return Err(Error::invalid(format!("siteIds must list 1-{max} sites")));
    }
    let mut seen = HashSet::new();
    for id in ids {
        site_id(id)?;
        if !seen.insert(id.as_str()) {
            return Err(Error::invalid("siteIds must not repeat a site"));
        }
    }
    Ok(())
}

/// An inclusive range touching at most `max_days` UTC days.
pub fn range(from: i64, to: i64, max_days: i64) -> Result<()> {
    time("from", from)?;
    time("to", to)?;
    if from > to {
        return Err(Error::invalid("from must not be after to"));
    }
    let days = (utc_day_start(to) - utc_day_start(from)) / DAY_MS + 1;
    if days > max_days {
        return Err(Error::invalid(format!("the range may cover at most {max_days} UTC days")));
    }
    Ok(())
}

pub fn timezone(tz: &str) -> Result<()> {
    chrono_tz::Tz::from_str(tz)
        .map(|_| ())
        .map_err(|_| Error::invalid("timezone must be an IANA zone such as America/Sao_Paulo"))
}

/// Active ISO 4217 codes.
const CURRENCIES: &str = "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD BTN BWP \
BYN BZD CAD CDF CHF CLP CNY COP CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ \
GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD \
MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR \
RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH \
UGX USD UYU UZS VED VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG";

/// The ISO 4217 codes `currency` takes (the OpenAPI document lists them).
pub fn currencies() -> Vec<&'static str> {
    CURRENCIES.split_whitespace().collect()
}

pub fn currency(c: &str) -> Result<()> {
    if c.len() == 3 && CURRENCIES.split_ascii_whitespace().any(|k| k == c) {
        Ok(())
    } else {
        Err(Error::invalid("currency must be an ISO 4217 code such as BRL"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_ids_are_bounded_unique_and_well_formed() {
        let ok: Vec<String> = (0..10).map(|i| format!("s{i}")).collect();
        assert!(site_ids(&ok).is_ok());
        let eleven: Vec<String> = (0..11).map(|i| format!("s{i}")).collect();
        assert!(site_ids(&eleven).is_err());
        assert!(site_ids(&[]).is_err());
        assert!(site_ids(&["a".into(), "a".into()]).is_err());
        assert!(site_ids(&["a b".into()]).is_err());
    }

    #[test]
    fn ranges_count_utc_days_touched() {
        let d = DAY_MS;
        assert!(range(0, 366 * d - 1, 366).is_ok());
        assert!(range(0, 366 * d, 366).is_err());
        assert!(range(d - 1, d, 2).is_ok());
        assert!(range(5, 4, 366).is_err());
        assert!(range(-1, 4, 366).is_err());
    }

    #[test]
    fn currencies_and_zones() {
        assert!(currency("BRL").is_ok());
        assert!(currency("brl").is_err());
        assert!(currency("XXX").is_err());
        assert!(timezone("America/Sao_Paulo").is_ok());
        assert!(timezone("Mars/Olympus").is_err());
    }
}
