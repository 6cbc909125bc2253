//! Settings from an optional TOML file plus `RASTRO_*` environment variables
//! (env wins). Every setting is declared once in the table below: its file key,
//! its env name, its default and its meaning. A bad value stops start-up with a
//! message naming the setting. `config/rastrod.toml` lists them all (a test
//! keeps it in step with this table).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One documented setting.
#[derive(Debug, Clone, Copy)]
pub struct SettingDoc {
    pub key: &'static str,
    pub env: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

pub use crate::secret::Secret;

crate::closed_set! {
    /// Who the dashboard is for (`RASTRO_DASHBOARD_AUDIENCE`): its screens
    /// and a few rules differ (an agency copies a board to its other clients).
    pub enum Audience {
        /// One Meta login for many clients.
        Agency = "agency",
        /// One company connecting its own Meta.
        Business = "business",
    }
}

macro_rules! settings {
    ($( $field:ident : $ty:ty = $key:literal, $env:literal, $default:literal, $parse:path, $help:literal; )*) => {
        /// The daemon's whole configuration.
        #[derive(Debug, Clone)]
        pub struct Config { $( pub $field: $ty, )* }

        pub const SETTINGS: &[SettingDoc] = &[
            $( SettingDoc { key: $key, env: $env, default: $default, help: $help }, )*
        ];

        impl Config {
            fn from_lookup(lookup: &dyn Fn(&SettingDoc) -> Option<String>) -> Result<Config, String> {
                let mut i = 0usize;
                $(
                    let doc = &SETTINGS[i];
                    i += 1;
                    let raw = lookup(doc).unwrap_or_else(|| doc.default.to_string());
                    let $field: $ty = $parse(raw.trim()).map_err(|why| {
                        format!("setting {} ({}): {}", doc.env, doc.key, why)
                    })?;
                )*
                let _ = i;
                Ok(Config { $( $field, )* })
            }
        }
    };
}

settings! {
    listen: String = "server.listen", "RASTRO_LISTEN", "127.0.0.1:8080", parse_addr,
        "address:port to serve on";
    body_limit_bytes: usize = "server.body_limit_bytes", "RASTRO_BODY_LIMIT_BYTES", "262144", parse_size,
        "largest request body accepted; larger ones get 413 PAYLOAD_TOO_LARGE";
    body_read_timeout: Duration = "server.body_read_timeout", "RASTRO_BODY_READ_TIMEOUT", "5s", parse_duration,
        "longest a request body may take to arrive whole; slower ones get 408 REQUEST_TIMEOUT";
    max_connections: usize = "server.max_connections", "RASTRO_MAX_CONNECTIONS", "10000", parse_usize_nonzero,
        "most open connections in total; past it new ones wait in the listen backlog";
    max_connections_per_ip: usize = "server.max_connections_per_ip", "RASTRO_MAX_CONNECTIONS_PER_IP", "1024", parse_usize,
        "most open connections from one client address (0: no cap, e.g. behind a reverse proxy); past it a new one gets 503 UNAVAILABLE and is closed";
    workers: usize = "server.workers", "RASTRO_WORKERS", "0", parse_usize,
        "HTTP worker threads; 0 means one per core";
    shutdown_grace: Duration = "server.shutdown_grace", "RASTRO_SHUTDOWN_GRACE", "30s", parse_duration,
        "how long in-flight requests may take to finish after SIGTERM/SIGINT";
    host_api_keys: Vec<Secret> = "server.host_api_key", "RASTRO_HOST_API_KEY", "", parse_keys,
        "host key(s), comma-separated; without one the host API refuses every call";
    database_url: String = "database.url", "RASTRO_DATABASE_URL", "sqlite://./data/rastrod.db", parse_db_url,
        "sqlite://path (relative or absolute) or postgres://...";
    database_pool_size: u32 = "database.pool_size", "RASTRO_DATABASE_POOL_SIZE", "8", parse_pool,
        "read connections in the pool (writes go through the group-commit writers)";
    write_batch_max: usize = "database.write_batch_max", "RASTRO_WRITE_BATCH_MAX", "256", parse_usize_nonzero,
        "most writes committed in one transaction by the group-commit writer";
    database_writers: usize = "database.writers", "RASTRO_DATABASE_WRITERS", "2", parse_usize_nonzero,
        "PostgreSQL: write connections committing batches at once (SQLite always has one writer)";
    write_queue_max: usize = "database.write_queue_max", "RASTRO_WRITE_QUEUE_MAX", "20000", parse_usize_nonzero,
        "most writes waiting for the writer; past it writes get 429 RATE_LIMITED";
    data_dir: PathBuf = "storage.data_dir", "RASTRO_DATA_DIR", "./data", parse_path,
        "thumbnails and other files";
    secrets_key: Option<Secret> = "secrets.key", "RASTRO_SECRETS_KEY", "", parse_secrets_key,
        "32 random bytes, base64 (rastrod keygen); without it connecting Meta and identify are SECRETS_KEY_MISSING";
    meta_fake: bool = "meta.fake", "RASTRO_META_FAKE", "false", parse_bool,
        "true serves the fake Graph API (demos and tests only, never for a customer)";
    meta_graph_url: String = "meta.graph_url", "RASTRO_META_GRAPH_URL", "https://graph.facebook.com", parse_graph_url,
        "Graph API base URL (plain http allowed on loopback only)";
    meta_app_id: Option<String> = "meta.app_id", "RASTRO_META_APP_ID", "", parse_opt_string,
        "the Login for Business app id; without it and the secret the login is META_LOGIN_UNAVAILABLE";
    meta_app_secret: Option<Secret> = "meta.app_secret", "RASTRO_META_APP_SECRET", "", parse_opt_secret,
        "the Login for Business app secret";
    federation_issuer: String = "federation.issuer", "RASTRO_FEDERATION_ISSUER", "https://site.api.amagerastro.com/federation", parse_issuer,
        "the trusted JWT issuer";
    federation_audience: Option<String> = "federation.audience", "RASTRO_FEDERATION_AUDIENCE", "", parse_opt_string,
        "this deployment's audience; without it federated calls are refused";
    federation_jwks: Option<String> = "federation.jwks", "RASTRO_FEDERATION_JWKS", "", parse_opt_string,
        "JWKS file path or URL; default <issuer>/.well-known/jwks.json";
    federation_leads: bool = "federation.leads", "RASTRO_FEDERATION_LEADS", "true", parse_bool,
        "serve the leads capability";
    federation_meta_ads: bool = "federation.meta_ads", "RASTRO_FEDERATION_META_ADS", "true", parse_bool,
        "serve the metaAds capability (needs leads)";
    federation_site_map: bool = "federation.site_map", "RASTRO_FEDERATION_SITE_MAP", "true", parse_bool,
        "serve the siteMap capability (the rollups are always written)";
    federation_visitor_profiles: bool = "federation.visitor_profiles", "RASTRO_FEDERATION_VISITOR_PROFILES", "true", parse_bool,
        "serve the visitorProfiles capability (getVisitorProfile, profile on live and session rows)";
    federation_people: bool = "federation.people", "RASTRO_FEDERATION_PEOPLE", "true", parse_bool,
        "serve the people capability (listPeople)";
    federation_tracked_links: bool = "federation.tracked_links", "RASTRO_FEDERATION_TRACKED_LINKS", "true", parse_bool,
        "serve the trackedLinks capability (the link functions and the /rastro/l redirect)";
    federation_meta_leads: bool = "federation.meta_leads", "RASTRO_FEDERATION_META_LEADS", "false", parse_bool,
        "serve the metaLeads capability: Meta Lead Ads, its functions and /rastro/meta/leadgen (needs metaAds and leads)";
    log: String = "log.filter", "RASTRO_LOG", "info", parse_string,
        "tracing filter (e.g. info, rastrod=debug)";
    log_format: LogFormat = "log.format", "RASTRO_LOG_FORMAT", "text", parse_log_format,
        "text or json";
    report_funnel_row_cap: usize = "reports.funnel_row_cap", "RASTRO_REPORT_FUNNEL_ROW_CAP", "2000000", parse_usize_nonzero,
        "most step rows a funnelsReport reads before it answers incomplete: true";
    report_row_cap: usize = "reports.lead_row_cap", "RASTRO_REPORT_LEAD_ROW_CAP", "12000", parse_usize_nonzero,
        "most ad rows in a report's campaign tree before it is marked reportIncomplete";
    spend_ad_row_cap: usize = "reports.spend_ad_row_cap", "RASTRO_REPORT_SPEND_AD_ROW_CAP", "12000", parse_usize_nonzero,
        "per-ad spend rows read for the campaign tree before spendIncomplete";
    spend_day_row_cap: usize = "reports.spend_day_row_cap", "RASTRO_REPORT_SPEND_DAY_ROW_CAP", "12000", parse_usize_nonzero,
        "site-day spend rows read for the rest of a report before spendIncomplete";
    leads_csv_page: usize = "reports.leads_csv_page", "RASTRO_LEADS_CSV_PAGE", "5000", parse_usize_nonzero,
        "leads read per query while leads.csv streams (memory holds about two such pages)";
    read_cache_ttl: Duration = "reports.read_cache_ttl", "RASTRO_READ_CACHE_TTL", "2s", parse_duration,
        "longest a polled read (meta.status) is served from cache; any write of this process ends it sooner";
    sync_live_interval: Duration = "sync.live_interval", "RASTRO_SYNC_LIVE_INTERVAL", "45m", parse_duration,
        "how often an account reads today and yesterday";
    sync_daily_hour: u32 = "sync.daily_hour", "RASTRO_SYNC_DAILY_HOUR", "4", parse_hour,
        "account-local hour from which the daily run (last 7 days) goes";
    sync_backfill_days: u32 = "sync.backfill_days", "RASTRO_SYNC_BACKFILL_DAYS", "90", parse_u32_nonzero,
        "days read right after linking";
    sync_backfill_block_days: u32 = "sync.backfill_block_days", "RASTRO_SYNC_BACKFILL_BLOCK_DAYS", "30", parse_u32_nonzero,
        "days read per backfill run";
    sync_gap_backfill_after: Duration = "sync.gap_backfill_after", "RASTRO_SYNC_GAP_BACKFILL_AFTER", "27d", parse_duration,
        "a pause longer than this backfills the gap first";
    sync_rate_limit_wait: Duration = "sync.rate_limit_wait", "RASTRO_SYNC_RATE_LIMIT_WAIT", "1h", parse_duration,
        "least wait after a throttle or usage over the threshold";
    sync_usage_threshold_pct: u32 = "sync.usage_threshold_pct", "RASTRO_SYNC_USAGE_THRESHOLD_PCT", "75", parse_pct,
        "usage header percentage that makes the sync back off";
    sync_retry_base: Duration = "sync.retry_base", "RASTRO_SYNC_RETRY_BASE", "15m", parse_duration,
        "first wait after a failed sync, doubling";
    sync_retry_max: Duration = "sync.retry_max", "RASTRO_SYNC_RETRY_MAX", "6h", parse_duration,
        "longest wait after failed syncs";
    sync_lease: Duration = "sync.lease", "RASTRO_SYNC_LEASE", "15m", parse_duration,
        "how long a run holds its account; a run past it is RUN_TIMEOUT";
    sync_max_concurrent: usize = "sync.max_concurrent", "RASTRO_SYNC_MAX_CONCURRENT", "4", parse_usize_nonzero,
        "account runs at once across all accounts";
    sync_reconcile_interval: Duration = "sync.reconcile_interval", "RASTRO_SYNC_RECONCILE_INTERVAL", "1m", parse_duration,
        "how often the supervisor reconciles live actors with the rows";
    capi_retry_steps: Vec<Duration> = "conversions.retry_steps", "RASTRO_CAPI_RETRY_STEPS", "1m,10m", parse_duration_list,
        "waits between send attempts (attempts = steps + 1)";
    capi_attempt_lease: Duration = "conversions.attempt_lease", "RASTRO_CAPI_ATTEMPT_LEASE", "15m", parse_duration,
        "lease on each send attempt; the sweeper resends attempts due longer ago";
    capi_sweep_interval: Duration = "conversions.sweep_interval", "RASTRO_CAPI_SWEEP_INTERVAL", "15m", parse_duration,
        "how often the sweeper looks for lost sends while any is pending";
    capi_max_age: Duration = "conversions.max_age", "RASTRO_CAPI_MAX_AGE", "7d", parse_duration,
        "older events fail with EVENT_TOO_OLD";
    capi_batch_max: usize = "conversions.batch_max", "RASTRO_CAPI_BATCH_MAX", "1000", parse_batch,
        "events per Conversions API request (Meta's limit is 1000)";
    capi_max_concurrent: usize = "conversions.max_concurrent", "RASTRO_CAPI_MAX_CONCURRENT", "16", parse_usize_nonzero,
        "pixels sending at once (each holds at most one batch in memory)";
    meta_expiring_soon: Duration = "meta.expiring_soon", "RASTRO_META_EXPIRING_SOON", "7d", parse_duration,
        "a token with less left is expiringSoon and is traded for a long-lived one";
    meta_request_timeout: Duration = "meta.request_timeout", "RASTRO_META_REQUEST_TIMEOUT", "30s", parse_duration,
        "timeout of one Graph API call";
    removal_batch_size: usize = "meta.removal_batch_size", "RASTRO_META_REMOVAL_BATCH_SIZE", "500", parse_usize_nonzero,
        "rows deleted per scheduled batch when unlinking or removing a connection";
    tracker_body_limit_bytes: usize = "analytics.tracker_body_limit_bytes", "RASTRO_TRACKER_BODY_LIMIT_BYTES", "65536", parse_size,
        "largest POST /rastro/events body; larger ones get 413 PAYLOAD_TOO_LARGE";
    tracker_ip_rate: u32 = "analytics.tracker_ip_rate", "RASTRO_TRACKER_IP_RATE", "6000", parse_u32_nonzero,
        "tracker events a minute per IPv4 address or IPv6 /64";
    tracker_site_rate: u32 = "analytics.tracker_site_rate", "RASTRO_TRACKER_SITE_RATE", "120000", parse_u32_nonzero,
        "tracker events a minute per site";
    tracker_new_visitor_rate: u32 = "analytics.tracker_new_visitor_rate", "RASTRO_TRACKER_NEW_VISITOR_RATE", "600", parse_u32_nonzero,
        "distinct visitor ids a minute per IPv4 address or IPv6 /64";
    trusted_proxies: Vec<crate::net::Cidr> = "analytics.trusted_proxies", "RASTRO_TRUSTED_PROXIES", "", crate::net::parse_cidrs,
        "comma-separated CIDRs whose X-Forwarded-For is read for the client address";
    geoip_db: Option<crate::geoip::GeoDb> = "analytics.geoip_db", "RASTRO_GEOIP_DB", "", crate::geoip::parse_setting,
        "MMDB file (GeoLite2 or DB-IP Lite, City or Country) for the sessions' country and region; none: both unknown";
    path_redaction: bool = "analytics.path_redaction", "RASTRO_PATH_REDACTION", "true", parse_bool,
        "store path segments with an e-mail as :email and token-like ones as :token";
    session_idle: Duration = "analytics.session_idle", "RASTRO_SESSION_IDLE", "30m", parse_duration,
        "inactivity that ends a session";
    session_max: Duration = "analytics.session_max", "RASTRO_SESSION_MAX", "24h", parse_duration,
        "longest session";
    session_cache: usize = "analytics.session_cache", "RASTRO_SESSION_CACHE", "50000", parse_usize,
        "visitors whose current session the tracker keeps in memory, confirmed by its stored version (0: none)";
    live_window: Duration = "analytics.live_window", "RASTRO_LIVE_WINDOW", "5m", parse_duration,
        "liveVisitors window (the manifest's liveWindowMs)";
    live_now_skew: Duration = "analytics.live_now_skew", "RASTRO_LIVE_NOW_SKEW", "120s", parse_duration,
        "largest distance of a public token's now from the server clock";
    rollup_interval: Duration = "analytics.rollup_interval", "RASTRO_ROLLUP_INTERVAL", "500ms", parse_duration,
        "how often the report actors apply queued events to the rollups";
    import_body_limit_bytes: usize = "analytics.import_body_limit_bytes", "RASTRO_IMPORT_BODY_LIMIT_BYTES", "16777216", parse_size,
        "largest analytics import body; larger ones get 413 PAYLOAD_TOO_LARGE";
    retention_interval: Duration = "analytics.retention_interval", "RASTRO_RETENTION_INTERVAL", "1h", parse_duration,
        "period of each retention class's run";
    retention_batch: usize = "analytics.retention_batch", "RASTRO_RETENTION_BATCH", "5000", parse_usize_nonzero,
        "rows one retention delete removes (one short transaction each)";
    rollup_batch_max: usize = "analytics.rollup_batch_max", "RASTRO_ROLLUP_BATCH_MAX", "1000", parse_usize_nonzero,
        "events applied in one rollup transaction";
    route_regroup_batch: usize = "analytics.route_regroup_batch", "RASTRO_ROUTE_REGROUP_BATCH", "5000", parse_usize_nonzero,
        "rows moved in one step of a route regroup (after a routePatterns change)";
    link_click_window: Duration = "analytics.link_click_window", "RASTRO_LINK_CLICK_WINDOW", "10s", parse_duration,
        "one counted click per client address and tracked link in this window";
    meta_webhook_verify_token: Option<Secret> = "meta.webhook_verify_token", "RASTRO_META_WEBHOOK_VERIFY_TOKEN", "", parse_verify_token,
        "the token Meta's webhook subscription check sends to GET /rastro/meta/leadgen (at least 16 characters)";
    meta_leads_retry_steps: Vec<Duration> = "meta_leads.retry_steps", "RASTRO_META_LEADS_RETRY_STEPS", "1m,5m,15m,1h", parse_duration_list,
        "waits between attempts to fetch a received form lead from Meta; the last one repeats until Meta answers";
    meta_leads_handler_timeout: Duration = "meta_leads.handler_timeout", "RASTRO_META_LEADS_HANDLER_TIMEOUT", "10s", parse_duration,
        "how long a form-lead delivery waits for the site's handler (then retried on RASTRO_CAPI_RETRY_STEPS)";
    meta_leads_reconcile: Duration = "meta_leads.reconcile", "RASTRO_META_LEADS_RECONCILE", "15m", parse_duration,
        "how often each linked form's leads are read from Meta, so a lead whose webhook never came is found";
    meta_leads_lease: Duration = "meta_leads.lease", "RASTRO_META_LEADS_LEASE", "5m", parse_duration,
        "how long a run holds its Page (another process takes it over after that)";
    meta_leads_sweep_interval: Duration = "meta_leads.sweep_interval", "RASTRO_META_LEADS_SWEEP_INTERVAL", "1m", parse_duration,
        "how often the Page actors' supervisor looks for receipts due (a lost wake-up waits at most this)";
    meta_login_config_id: Option<String> = "meta.login_config_id", "RASTRO_META_LOGIN_CONFIG_ID", "", parse_opt_string,
        "the Facebook Login for Business configuration id the dashboard's login popup asks for";
    dashboard_audience: Audience = "dashboard.audience", "RASTRO_DASHBOARD_AUDIENCE", "agency", parse_audience,
        "agency (one Meta login for many clients) or business (one company connecting its own Meta)";
    dashboard_product_name: String = "dashboard.product_name", "RASTRO_DASHBOARD_PRODUCT_NAME", "Rastro", parse_product_name,
        "who reads the spend, as the business screens say it (\"o Rastro lê o gasto\")";
    dashboard_partner: Option<String> = "dashboard.partner", "RASTRO_DASHBOARD_PARTNER", "", parse_opt_string,
        "business audience: the partner who runs the company's ads (its card and the locks name it)";
}

impl Config {
    /// Defaults only: no file, no environment.
    pub fn defaults() -> Config {
        Config::from_lookup(&|_| None).expect("the defaults parse")
    }

    /// Reads the optional file, then the process environment.
    pub fn load(file: Option<&Path>) -> Result<Config, String> {
        let env: BTreeMap<String, String> = std::env::vars().filter(|(k, _)| k.starts_with("RASTRO_")).collect();
        Config::load_from(file, &env)
    }

    pub fn load_from(file: Option<&Path>, env: &BTreeMap<String, String>) -> Result<Config, String> {
        let file_values = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("config file {}: {e}", path.display()))?;
                flatten_file(&text).map_err(|e| format!("config file {}: {e}", path.display()))?
            }
            None => BTreeMap::new(),
        };
        let config =
            Config::from_lookup(&|doc| env.get(doc.env).cloned().or_else(|| file_values.get(doc.key).cloned()))?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), String> {
        if self.federation_meta_ads && !self.federation_leads {
            return Err("setting RASTRO_FEDERATION_META_ADS (federation.meta_ads): metaAds needs leads on \
                        (RASTRO_FEDERATION_LEADS=true): spend reaches readers only through the lead reports"
                .into());
        }
        if self.federation_meta_leads && !(self.federation_meta_ads && self.federation_leads) {
            return Err("setting RASTRO_FEDERATION_META_LEADS (federation.meta_leads): metaLeads needs metaAds and \
                        leads on (RASTRO_FEDERATION_META_ADS=true, RASTRO_FEDERATION_LEADS=true)"
                .into());
        }
        if self.meta_app_id.is_some() != self.meta_app_secret.is_some() {
            tracing::warn!("RASTRO_META_APP_ID and RASTRO_META_APP_SECRET go together: the login needs both");
        }
        Ok(())
    }

    pub fn is_sqlite(&self) -> bool {
        self.database_url.starts_with("sqlite://")
    }
}

/// `[section] name = value` → `"section.name" → "value"`; unknown keys are errors.
fn flatten_file(text: &str) -> Result<BTreeMap<String, String>, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    let mut out = BTreeMap::new();
    for (section, value) in table {
        let toml::Value::Table(inner) = value else {
            return Err(format!("`{section}` must be a [section]"));
        };
        for (name, value) in inner {
            let key = format!("{section}.{name}");
            if !SETTINGS.iter().any(|s| s.key == key) {
                return Err(format!("unknown setting `{key}`"));
            }
            let text = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Array(items) => items
                    .into_iter()
                    .map(|v| match v {
                        toml::Value::String(s) => Ok(s),
                        other => Err(format!("`{key}`: expected strings, found {}", other.type_str())),
                    })
                    .collect::<Result<Vec<_>, _>>()?
                    .join(","),
                other => {
                    return Err(format!("`{key}`: unsupported value of type {}", other.type_str()));
                }
            };
            out.insert(key, text);
        }
    }
    Ok(out)
}

fn parse_string(s: &str) -> Result<String, String> {
    Ok(s.to_string())
}

fn parse_opt_string(s: &str) -> Result<Option<String>, String> {
    Ok((!s.is_empty()).then(|| s.to_string()))
}

fn parse_audience(s: &str) -> Result<Audience, String> {
    Audience::parse(s).ok_or_else(|| {
        let all: Vec<&str> = Audience::ALL.iter().map(|a| a.as_str()).collect();
        format!("expected {}, got `{s}`", all.join(" or "))
    })
}

fn parse_product_name(s: &str) -> Result<String, String> {
    if s.is_empty() || s.chars().count() > 40 || s.chars().any(char::is_control) {
        return Err("expected 1-40 printable characters".into());
    }
    Ok(s.to_string())
}

fn parse_opt_secret(s: &str) -> Result<Option<Secret>, String> {
    Ok((!s.is_empty()).then(|| Secret::new(s)))
}

fn parse_verify_token(s: &str) -> Result<Option<Secret>, String> {
    if !s.is_empty() && s.chars().count() < 16 {
        return Err("the verify token needs at least 16 characters".into());
    }
    parse_opt_secret(s)
}

fn parse_secrets_key(s: &str) -> Result<Option<Secret>, String> {
    let key = parse_opt_secret(s)?;
    if let Some(k) = &key {
        crate::crypto::SecretsKey::from_base64(k).map_err(|e| e.to_string())?;
    }
    Ok(key)
}

fn parse_keys(s: &str) -> Result<Vec<Secret>, String> {
    let keys: Vec<Secret> = s.split(',').map(str::trim).filter(|k| !k.is_empty()).map(Secret::new).collect();
    if keys.iter().any(|k| k.expose().len() < 16) {
        return Err("every host key must be at least 16 characters".into());
    }
    Ok(keys)
}

fn parse_addr(s: &str) -> Result<String, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs().map_err(|_| "expected address:port, such as 127.0.0.1:8080".to_string())?;
    Ok(s.to_string())
}

fn parse_db_url(s: &str) -> Result<String, String> {
    crate::db::DbUrl::parse(s).map(|_| s.to_string())
}

fn parse_graph_url(s: &str) -> Result<String, String> {
    let rest = if let Some(r) = s.strip_prefix("https://") {
        r
    } else if let Some(r) = s.strip_prefix("http://") {
        let host = r.split(['/', ':']).next().unwrap_or("");
        if !matches!(host, "127.0.0.1" | "localhost" | "[") && !host.starts_with("[::1") {
            return Err("plain http only on loopback (127.0.0.1, localhost, [::1])".into());
        }
        r
    } else {
        return Err("expected an https:// URL".into());
    };
    if rest.is_empty() {
        return Err("missing host".into());
    }
    Ok(s.trim_end_matches('/').to_string())
}

fn parse_issuer(s: &str) -> Result<String, String> {
    if !s.starts_with("https://") && !s.starts_with("http://127.0.0.1") && !s.starts_with("http://localhost") {
        return Err("expected an https:// URL".into());
    }
    Ok(s.trim_end_matches('/').to_string())
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err(format!("expected true or false, got `{s}`")),
    }
}

fn parse_usize(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| format!("expected a whole number, got `{s}`"))
}

fn parse_usize_nonzero(s: &str) -> Result<usize, String> {
    match parse_usize(s)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

fn parse_u32_nonzero(s: &str) -> Result<u32, String> {
    u32::try_from(parse_usize_nonzero(s)?).map_err(|_| "too large".to_string())
}

fn parse_pool(s: &str) -> Result<u32, String> {
    let n = parse_u32_nonzero(s)?;
    if n > 256 { Err("at most 256".into()) } else { Ok(n) }
}

fn parse_batch(s: &str) -> Result<usize, String> {
    let n = parse_usize_nonzero(s)?;
    if n > 1000 { Err("Meta takes at most 1000 events a request".into()) } else { Ok(n) }
}

fn parse_hour(s: &str) -> Result<u32, String> {
    let n: u32 = s.parse().map_err(|_| format!("expected an hour 0-23, got `{s}`"))?;
    if n > 23 { Err("expected an hour 0-23".into()) } else { Ok(n) }
}

fn parse_pct(s: &str) -> Result<u32, String> {
    let n: u32 = s.parse().map_err(|_| format!("expected a percentage 1-100, got `{s}`"))?;
    if !(1..=100).contains(&n) { Err("expected a percentage 1-100".into()) } else { Ok(n) }
}

fn parse_size(s: &str) -> Result<usize, String> {
    let n = parse_usize_nonzero(s)?;
    if n < 1024 { Err("at least 1024 bytes".into()) } else { Ok(n) }
}

fn parse_path(s: &str) -> Result<PathBuf, String> {
    if s.is_empty() { Err("must not be empty".into()) } else { Ok(PathBuf::from(s)) }
}

fn parse_log_format(s: &str) -> Result<LogFormat, String> {
    match s {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err(format!("expected text or json, got `{s}`")),
    }
}

/// `90s`, `15m`, `1h`, `7d`, `250ms`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("expected a duration such as 90s, 15m, 6h or 7d, got `{s}`");
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| bad())?;
    let ms = match unit {
        "ms" => n,
        "" | "s" => n.checked_mul(1_000).ok_or_else(bad)?,
        "m" => n.checked_mul(60_000).ok_or_else(bad)?,
        "h" => n.checked_mul(3_600_000).ok_or_else(bad)?,
        "d" => n.checked_mul(86_400_000).ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    if ms == 0 {
        return Err("must be longer than zero".into());
    }
    Ok(Duration::from_millis(ms))
}

fn parse_duration_list(s: &str) -> Result<Vec<Duration>, String> {
    let steps = s.split(',').map(|p| parse_duration(p.trim())).collect::<Result<Vec<_>, _>>()?;
    if steps.is_empty() { Err("at least one step".into()) } else { Ok(steps) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn every_audience_reads_back_from_its_string() {
        crate::assert_round_trip!(Audience);
        assert_eq!(parse_audience("business"), Ok(Audience::Business));
        assert_eq!(parse_audience("agencies"), Err("expected agency or business, got `agencies`".to_string()));
    }

    #[test]
    fn defaults_match_the_contract() {
        let c = Config::defaults();
        assert_eq!(c.listen, "127.0.0.1:8080");
        assert_eq!(c.database_url, "sqlite://./data/rastrod.db");
        assert!(c.host_api_keys.is_empty());
        assert_eq!(c.sync_lease, Duration::from_secs(900));
        assert_eq!(c.capi_retry_steps, vec![Duration::from_secs(60), Duration::from_secs(600)]);
        assert_eq!(c.body_limit_bytes, 256 * 1024);
    }

    #[test]
    fn env_wins_over_the_file_and_bad_values_name_the_setting() {
        let dir = std::env::temp_dir().join(format!("rastrod-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(&path, "[server]\nlisten = \"127.0.0.1:9000\"\n[sync]\nlease = \"5m\"\n").unwrap();
        let c = Config::load_from(Some(&path), &env(&[("RASTRO_LISTEN", "127.0.0.1:9100")])).unwrap();
        assert_eq!(c.listen, "127.0.0.1:9100");
        assert_eq!(c.sync_lease, Duration::from_secs(300));

        let err = Config::load_from(None, &env(&[("RASTRO_SYNC_LEASE", "soon")])).unwrap_err();
        assert!(err.contains("RASTRO_SYNC_LEASE") && err.contains("sync.lease"), "{err}");
        let err = Config::load_from(None, &env(&[("RASTRO_DATABASE_URL", "mysql://x")])).unwrap_err();
        assert!(err.contains("RASTRO_DATABASE_URL"), "{err}");
        std::fs::write(&path, "[server]\nlistn = \"x\"\n").unwrap();
        let err = Config::load_from(Some(&path), &env(&[])).unwrap_err();
        assert!(err.contains("server.listn"), "{err}");
    }

    #[test]
    fn meta_ads_without_leads_is_refused_at_start() {
        let err = Config::load_from(None, &env(&[("RASTRO_FEDERATION_LEADS", "false")])).unwrap_err();
        assert!(err.contains("RASTRO_FEDERATION_META_ADS"), "{err}");
    }

    #[test]
    fn short_host_keys_and_remote_plain_http_are_refused() {
        assert!(Config::load_from(None, &env(&[("RASTRO_HOST_API_KEY", "short")])).is_err());
        assert!(Config::load_from(None, &env(&[("RASTRO_META_GRAPH_URL", "http://graph.example.com")])).is_err());
        let c = Config::load_from(None, &env(&[("RASTRO_META_GRAPH_URL", "http://127.0.0.1:9999/")])).unwrap();
        assert_eq!(c.meta_graph_url, "http://127.0.0.1:9999");
    }

    #[test]
    fn secrets_never_print() {
        let c = Config::load_from(None, &env(&[("RASTRO_HOST_API_KEY", "canary-host-key-0123456789")])).unwrap();
        assert!(!format!("{c:?}").contains("canary-host-key"));
    }

    /// The shipped config file names every setting with its default, and nothing else.
    #[test]
    fn the_shipped_config_file_lists_every_setting_with_its_default() {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/rastrod.toml")).unwrap();
        let values = flatten_file(&text).unwrap();
        for s in SETTINGS {
            let commented = text.contains(&format!("# {} = ", s.key.split('.').nth(1).unwrap()));
            assert!(values.contains_key(s.key) || commented, "config/rastrod.toml misses {}", s.key);
            if let Some(v) = values.get(s.key) {
                assert_eq!(v, s.default, "config/rastrod.toml: {} differs from its default", s.key);
            }
            assert!(text.contains(s.env), "config/rastrod.toml does not name {}", s.env);
        }
    }
}
