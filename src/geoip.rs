//! Country and region from the client's address (rule TRK-33): an MMDB
//! file (GeoLite2 or DB-IP Lite, City or Country) named by `RASTRO_GEOIP_DB`,
//! read with the `maxminddb` crate. ISO 3166-1 alpha-2 country, ISO 3166-2
//! region (`BR-SP`; none from a country-only database); never a city. Without
//! the setting both are unknown. The address itself is never kept.

use std::net::IpAddr;
use std::sync::Arc;

use serde::Deserialize;

/// An opened database, shared by every request.
#[derive(Clone)]
pub struct GeoDb(Arc<maxminddb::Reader<Vec<u8>>>);

impl std::fmt::Debug for GeoDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GeoDb")
    }
}

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    country: Option<Named<'a>>,
    #[serde(borrow, default)]
    subdivisions: Vec<Named<'a>>,
}

#[derive(Deserialize)]
struct Named<'a> {
    iso_code: Option<&'a str>,
}

fn country_code(s: &str) -> bool {
    s.len() == 2 && s.bytes().all(|b| b.is_ascii_uppercase())
}

impl GeoDb {
    /// Opens `path`, or says why not (start-up stops, naming the setting).
    pub fn open(path: &str) -> Result<GeoDb, String> {
        let reader =
            maxminddb::Reader::open_readfile(path).map_err(|e| format!("cannot read the MMDB file {path}: {e}"))?;
        Ok(GeoDb(Arc::new(reader)))
    }

    /// `(country, region)` of an address; unknown parts are None.
    pub fn locate(&self, ip: IpAddr) -> (Option<String>, Option<String>) {
        let Ok(found) = self.0.lookup(ip) else { return (None, None) };
        let Ok(Some(record)) = found.decode::<Record<'_>>() else { return (None, None) };
        let country = record.country.and_then(|c| c.iso_code).filter(|c| country_code(c)).map(str::to_string);
        let region = match (&country, record.subdivisions.first().and_then(|s| s.iso_code)) {
            (Some(c), Some(sub))
                if !sub.is_empty() && sub.len() <= 3 && sub.bytes().all(|b| b.is_ascii_alphanumeric()) =>
            {
                Some(format!("{c}-{sub}"))
            }
            _ => None,
        };
        (country, region)
    }
}

/// `RASTRO_GEOIP_DB`: empty for none.
pub fn parse_setting(s: &str) -> Result<Option<GeoDb>, String> {
    if s.is_empty() { Ok(None) } else { GeoDb::open(s).map(Some) }
}
