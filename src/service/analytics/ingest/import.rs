//! The import (IMP-01 to IMP-07): historical events, as NDJSON or a JSON
//! array, through the live pipeline at their own times. All or nothing: every
//! line is checked first, then the whole import is one write of the
//! group-commit writer (a line older than its visitor's latest stored event
//! rolls it back). Idempotent by `importId` and the body's SHA-256.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::db::AnyConnection;
use crate::error::{Code, Error, Result};
use crate::service::analytics::ingest::accept::{self, Visit};
use crate::service::analytics::ingest::agent::{self, Agent, BROWSERS, OSES};
use crate::service::analytics::ingest::batch::{self, Incoming, LineOrigin};
use crate::service::analytics::ingest::urls;
use crate::service::analytics::vocabulary::LineType;
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::sites;
use crate::store::analytics as store;

pub const MAX_LINES: usize = 10_000;
const SITE_PAST_MS: i64 = 400 * 86_400_000;
/// How many invalid line numbers a refusal names.
const NAMED_LINES: usize = 10;

#[derive(Debug, Clone, Serialize, PartialEq, Eq, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportAnswer {
    pub import_id: String,
    pub created: bool,
    pub accepted: usize,
    pub bot: usize,
    pub sessions: usize,
}

/// `importId`: 1–128 of `[A-Za-z0-9_.:-]` (rule IMP-01).
pub fn check_import_id(id: &str) -> Result<()> {
    let ok = (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b));
    if ok { Ok(()) } else { Err(Error::invalid("importId must be 1-128 of [A-Za-z0-9_.:-]")) }
}

/// The body's lines: a JSON array, or one JSON object a line.
pub fn lines(body: &[u8], ndjson: bool) -> Result<Vec<std::result::Result<Value, ()>>> {
    let lines: Vec<std::result::Result<Value, ()>> = if ndjson {
        body.split(|b| *b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .map(|l| serde_json::from_slice::<Value>(l).map_err(|_| ()))
            .collect()
    } else {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Array(items)) => items.into_iter().map(Ok).collect(),
            _ => return Err(Error::invalid("the body must be a JSON array of events (or NDJSON)")),
        }
    };
    if lines.is_empty() || lines.len() > MAX_LINES {
        return Err(Error::invalid(format!("an import holds 1-{MAX_LINES} events")));
    }
    Ok(lines)
}

/// One checked line, ready for the pipeline.
struct Line {
    number: usize,
    occurred_at: i64,
    visitor_id: String,
    bot: bool,
    agent: Agent,
    language: Option<String>,
    event: Incoming,
}

fn text<'a>(o: &'a Map<String, Value>, k: &str) -> std::result::Result<Option<&'a str>, ()> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(()),
    }
}

fn bounded(o: &Map<String, Value>, k: &str, max: usize) -> std::result::Result<Option<String>, ()> {
    match text(o, k)? {
        None => Ok(None),
        Some(s) if (1..=max).contains(&s.chars().count()) && !s.chars().any(char::is_control) => {
            Ok(Some(s.to_string()))
        }
        Some(_) => Err(()),
    }
}

fn country_code(s: &str) -> bool {
    s.len() == 2 && s.bytes().all(|b| b.is_ascii_uppercase())
}

fn region_code(s: &str) -> bool {
    s.split_once('-').is_some_and(|(c, r)| {
        country_code(c) && (1..=3).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Checks one line (rules IMP-04, IMP-07); `Err(())` makes it invalid.
fn check_line(number: usize, v: &Value, site: &sites::Site, now: i64) -> std::result::Result<Line, ()> {
    let o = v.as_object().ok_or(())?;
    let occurred_at = o.get("occurredAt").and_then(Value::as_i64).ok_or(())?;
    if occurred_at < site.created_at - SITE_PAST_MS || occurred_at > now {
        return Err(());
    }
    let visitor_id = text(o, "visitorId")?.ok_or(())?.to_string();
    // u_ ids come from identify, which this host has not issued yet.
    if !batch::is_visitor_id(&visitor_id) || visitor_id.starts_with("u_") {
        return Err(());
    }
    let ua = text(o, "userAgent")?;
    let bot = ua.is_some_and(agent::is_bot);
    let mut agent = ua.map(agent::classify).unwrap_or_default();
    let mut origin = LineOrigin { line: number, ..LineOrigin::default() };
    if let Some(d) = text(o, "device")? {
        agent.device = Some(agent::Device::parse(d).ok_or(())?);
    }
    if let Some(b) = text(o, "browser")? {
        agent.browser = Some(BROWSERS.iter().copied().find(|x| *x == b).ok_or(())?);
    }
    if let Some(x) = text(o, "os")? {
        agent.os = Some(OSES.iter().copied().find(|y| *y == x).ok_or(())?);
    }
    origin.device = agent.device.map(|d| d.as_str().to_string());
    origin.browser = agent.browser.map(str::to_string);
    origin.os = agent.os.map(str::to_string);
    origin.country =
        text(o, "country")?.map(|c| if country_code(c) { Ok(c.to_string()) } else { Err(()) }).transpose()?;
    origin.region = text(o, "region")?.map(|r| if region_code(r) { Ok(r.to_string()) } else { Err(()) }).transpose()?;
    let language = text(o, "language")?.map(|l| urls::language(l).ok_or(())).transpose()?;
    origin.language = language.clone();
    let kind = LineType::parse(text(o, "type")?.ok_or(())?).ok_or(())?;
    let pageview_id = || text(o, "pageviewId").ok().flatten().filter(|p| batch::is_pageview_id(p)).map(str::to_string);
    let properties = || batch::properties(o.get("properties"), true).map_err(|_| ());
    // `url` (checked and split like a tracker URL) or `path` (a stored path), exactly one.
    let page = || -> std::result::Result<url::Url, ()> {
        match (text(o, "url")?, text(o, "path")?) {
            (Some(u), None) => {
                let url = urls::parse_page_url(u).ok_or(())?;
                let (host, port) = urls::host_of(&url);
                if urls::on_domains(&host, port, &site.domains) { Ok(url) } else { Err(()) }
            }
            (None, Some(p)) if p.starts_with('/') && p.chars().count() <= 1024 && !p.chars().any(char::is_control) => {
                url::Url::parse("https://import.invalid/").map_err(|_| ())
            }
            _ => Err(()),
        }
    };
    if let Some(p) = text(o, "path")? {
        origin.path = Some(p.to_string());
        for (field, slot) in [
            ("source", &mut origin.source),
            ("medium", &mut origin.medium),
            ("campaign", &mut origin.campaign),
            ("term", &mut origin.term),
            ("content", &mut origin.content),
        ] {
            *slot = bounded(o, field, 100)?;
        }
        origin.affiliate = bounded(o, "affiliate", 64)?;
    }
    let referrer = text(o, "referrer")?.map(str::to_string);
    if referrer.as_deref().is_some_and(|r| urls::referrer_host(r).is_none()) {
        return Err(());
    }
    let origin = Some(Box::new(origin));
    let ts = Some(occurred_at);
    let event = match kind {
        LineType::Pageview => Incoming::Pageview {
            ts,
            pageview_id: pageview_id().ok_or(())?,
            url: page()?,
            referrer,
            properties: properties()?,
            origin,
        },
        LineType::Event => {
            let name = bounded(o, "name", 120)?.ok_or(())?;
            if batch::is_reserved_name(&name) {
                return Err(());
            }
            Incoming::Custom { ts, url: page()?, name, properties: properties()?, origin }
        }
        LineType::Vitals => {
            let vitals = batch::vitals_of(o);
            if vitals.is_empty() {
                return Err(());
            }
            Incoming::Vitals { pageview_id: pageview_id().ok_or(())?, vitals }
        }
        LineType::Engagement => {
            let engaged_ms =
                o.get("engagedMs").and_then(Value::as_i64).filter(|e| (0..=86_400_000).contains(e)).ok_or(())?;
            Incoming::Engagement { pageview_id: pageview_id().ok_or(())?, engaged_ms }
        }
    };
    Ok(Line { number, occurred_at, visitor_id, bot, agent, language, event })
}

fn sha256_hex(body: &[u8]) -> String {
    Sha256::digest(body).iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs an import for `site_id`: the answer and whether it was created.
pub async fn import(cx: &Context, site_id: &str, import_id: &str, body: &[u8], ndjson: bool) -> Result<ImportAnswer> {
    check_import_id(import_id)?;
    let raw = lines(body, ndjson)?;
    let sid = site_id.to_string();
    let site = cx.read(move |c| sites::get(c, &sid)).await?;
    let now = cx.now();
    let mut checked = Vec::with_capacity(raw.len());
    let mut invalid = Vec::new();
    for (i, line) in raw.iter().enumerate() {
        match line.as_ref().map_err(|_| ()).and_then(|v| check_line(i + 1, v, &site, now)) {
            Ok(l) => checked.push(l),
            Err(()) => invalid.push(i + 1),
        }
    }
    if !invalid.is_empty() {
        let named: Vec<String> = invalid.iter().take(NAMED_LINES).map(usize::to_string).collect();
        return Err(Error::invalid(format!("invalid lines: {}", named.join(", "))));
    }
    let sha = sha256_hex(body);
    let (import_id, site_id) = (import_id.to_string(), site.site_id.clone());
    let visit = Visit {
        site_id: site.site_id.clone(),
        domains: site.domains.clone(),
        route_patterns: site.route_patterns.clone(),
        visitor_id: String::new(),
        received_at: now,
        sent_at: None,
        hash: false,
        redact: cx.config.path_redaction,
        language: None,
        agent: Agent::default(),
        country: None,
        region: None,
        idle_ms: cx.config.session_idle.as_millis() as i64,
        max_ms: cx.config.session_max.as_millis() as i64,
        trusted: true,
        // An import keeps no click id (rule WA-33 is the tracker's).
        click_key: None,
        user_agent: None,
        // Imports read every session: the tracker's memory is its own.
        kept_session: None,
    };
    // Up to 10,000 lines: a write of its own (see `db::writer`).
    cx.write_alone(move |c| {
        let answer = run(c, &visit, &site_id, &import_id, &sha, checked, now)?;
        let effects = Effects::live(&site_id, answer.created);
        Ok(Written::new(answer, effects))
    })
    .await
}

/// The write: a repeat answers the first answer; else every visitor's lines
/// in `(occurredAt, line)` order through acceptance (rule IMP-05).
fn run(
    conn: &mut AnyConnection,
    v: &Visit,
    site_id: &str,
    import_id: &str,
    sha: &str,
    lines: Vec<Line>,
    now: i64,
) -> Result<ImportAnswer> {
    if let Some(prior) = store::import(conn, site_id, import_id)? {
        if prior.body_sha256 != sha {
            return Err(Error::new(Code::Conflict, "this importId was used with another body"));
        }
        let mut answer: ImportAnswer = serde_json::from_str(&prior.answer).map_err(Error::internal)?;
        answer.created = false;
        return Ok(answer);
    }
    let mut answer = ImportAnswer { import_id: import_id.to_string(), created: true, accepted: 0, bot: 0, sessions: 0 };
    // The earliest imported pageview lowers the site map's `coverageFrom` (§5.5).
    let pageviews = lines.iter().filter(|l| !l.bot && matches!(l.event, Incoming::Pageview { .. }));
    if let Some(earliest) = pageviews.map(|l| l.occurred_at).min() {
        crate::store::analytics::site_map::note_imported(conn, site_id, earliest)?;
    }
    // Past days gain funnel step rows: PostgreSQL lays them out again.
    if let Some(earliest) = lines.iter().filter(|l| !l.bot).map(|l| l.occurred_at).min() {
        crate::service::analytics::reports::funnel_layout::reopen(conn, site_id, earliest)?;
    }
    let mut by_visitor: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for line in lines {
        if line.bot {
            answer.bot += 1;
        } else {
            by_visitor.entry(line.visitor_id.clone()).or_default().push(line);
        }
    }
    for (visitor_id, mut lines) in by_visitor {
        lines.sort_by_key(|l| (l.occurred_at, l.number));
        let first = &lines[0];
        let visit = Visit { visitor_id, agent: first.agent.clone(), language: first.language.clone(), ..v.clone() };
        let numbers: Vec<usize> = lines.iter().map(|l| l.number).collect();
        let outcome = accept::accept(conn, &visit, lines.into_iter().map(|l| Some(l.event)).collect())?;
        if outcome.rejected > 0 {
            // A resent pageview id, or engagement/vitals naming none: the line is invalid.
            return Err(Error::invalid(format!(
                "invalid lines among {}: a pageviewId already stored, or naming no pageview",
                numbers.iter().take(NAMED_LINES).map(usize::to_string).collect::<Vec<_>>().join(", ")
            )));
        }
        answer.accepted += outcome.accepted;
        answer.sessions += outcome.sessions;
    }
    let text = serde_json::to_string(&answer).map_err(Error::internal)?;
    store::insert_import(conn, site_id, import_id, sha, &text, now)?;
    Ok(answer)
}
