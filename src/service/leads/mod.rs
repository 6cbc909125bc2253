//! Leads from the host's server: recordLead, setLeadStage, removeLead and the
//! lead reads. Every write keeps the lead's rollup counters in the same
//! transaction, so the reports never scan the leads.

pub mod api;
pub mod board;
pub mod filters;
pub mod formatted;
pub mod metrics;
pub mod names;
pub mod reads;
mod record;
mod record_many;
pub mod reports;
mod site_sales;
mod tree;
pub mod web_visit;

pub use record::record;
pub use record_many::{queued_calls, record_lead};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::effects::{Effects, Written};
use crate::service::meta::conversions::{self, contact_hashes};
use crate::service::sites;
use crate::service::validate;
use crate::store::leads::board as pipeline;
use crate::store::leads::rollups::{self, Delta, RollupKey};
use crate::store::leads::{self as store, LeadRow, ListFilter, NewLeadEvent};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    New,
    Qualified,
    Won,
    Lost,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::New => "new",
            Stage::Qualified => "qualified",
            Stage::Won => "won",
            Stage::Lost => "lost",
        }
    }
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordLead {
    /// The host's own id for the lead; one lead per (site, leadKey).
    pub lead_key: String,
    pub event_id: String,
    pub occurred_at: i64,
    pub label: Option<String>,
    /// `ctwa_ad` is the paid origin; any other `[a-z0-9_]{1,64}` is organic.
    pub origin: String,
    pub ad_id: Option<String>,
    pub adset_id: Option<String>,
    pub campaign_id: Option<String>,
    pub ad_name: Option<String>,
    pub adset_name: Option<String>,
    pub campaign_name: Option<String>,
    /// Stored, never returned by any read.
    pub click_id: Option<String>,
    /// A board column key; one the pipeline does not declare is ignored.
    pub column: Option<String>,
    /// `{ph: [sha256 hex…], externalId?: sha256 hex}`; any other shape is ignored whole.
    #[schema(value_type = Option<Object>)]
    pub meta: Option<serde_json::Value>,
    /// The WhatsApp reference the host read in the lead's first message
    /// (6 characters; docs/whatsapp.md, rule WA-10): the lead inherits the
    /// visit that tapped the site's WhatsApp link.
    pub web_ref: Option<String>,
}

impl RecordLead {
    /// A first contact with nothing but its key, event, time and origin: no
    /// ad, names, column or hashes (in-process callers fill what they have).
    pub fn new(lead_key: impl Into<String>, event_id: impl Into<String>, occurred_at: i64, origin: &str) -> RecordLead {
        RecordLead {
            lead_key: lead_key.into(),
            event_id: event_id.into(),
            occurred_at,
            label: None,
            origin: origin.into(),
            ad_id: None,
            adset_id: None,
            campaign_id: None,
            ad_name: None,
            adset_name: None,
            campaign_name: None,
            click_id: None,
            column: None,
            meta: None,
            web_ref: None,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordLeadAnswer {
    pub lead_id: String,
    pub created: bool,
    /// With `webRef`, on the call that created the lead: whether the
    /// reference found its visit (rule WA-10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_ref: Option<web_visit::WebRefOutcome>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetLeadStage {
    pub stage: Option<Stage>,
    pub column: Option<String>,
    /// The lead's sale total, with `won` only.
    pub revenue_cents: Option<i64>,
    pub event_id: String,
    pub occurred_at: i64,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<serde_json::Value>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetLeadStageAnswer {
    pub lead_id: String,
    /// false for a replayed eventId, or a move that changed nothing.
    pub accepted: bool,
}

/// Where a lead came in: a conversation (every host lead) or a Meta instant
/// form (the origins `lead_form` and `lead_form_organic`, LEADADS.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Whatsapp,
    Form,
}

impl Channel {
    /// The origins of Meta instant-form leads.
    pub const FORM_ORIGINS: [&'static str; 2] = ["lead_form", "lead_form_organic"];

    pub fn of_origin(origin: &str) -> Channel {
        if Channel::FORM_ORIGINS.contains(&origin) { Channel::Form } else { Channel::Whatsapp }
    }
}

/// A lead as reads return it: never the click id.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Lead {
    pub lead_id: String,
    pub site_id: String,
    pub lead_key: String,
    pub label: Option<String>,
    pub origin: String,
    /// `form` for a Meta instant-form lead, else `whatsapp`.
    pub channel: Channel,
    pub campaign_id: Option<String>,
    pub adset_id: Option<String>,
    pub ad_id: Option<String>,
    pub campaign_name: Option<String>,
    pub adset_name: Option<String>,
    pub ad_name: Option<String>,
    pub stage: Stage,
    pub column: Option<String>,
    pub qualified: bool,
    pub won: bool,
    pub revenue_cents: i64,
    pub first_at: i64,
    pub updated_at: i64,
}

fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

fn parse_stage(s: &str) -> Stage {
    match s {
        "qualified" => Stage::Qualified,
        "won" => Stage::Won,
        "lost" => Stage::Lost,
        _ => Stage::New,
    }
}

impl From<LeadRow> for Lead {
    fn from(r: LeadRow) -> Self {
        Lead {
            stage: parse_stage(&r.stage),
            campaign_id: opt(&r.campaign_id),
            adset_id: opt(&r.adset_id),
            ad_id: opt(&r.ad_id),
            lead_id: r.id,
            site_id: r.site_id,
            lead_key: r.lead_key,
            label: r.label,
            channel: Channel::of_origin(&r.origin),
            origin: r.origin,
            campaign_name: r.campaign_name,
            adset_name: r.adset_name,
            ad_name: r.ad_name,
            column: r.column_key,
            qualified: r.ever_qualified,
            won: r.ever_won,
            revenue_cents: r.revenue_cents,
            first_at: r.first_at,
            updated_at: r.updated_at,
        }
    }
}

fn check_ad_id(field: &str, v: &Option<String>) -> Result<()> {
    match v {
        Some(s)
            if s.is_empty()
                || s.len() > 64
                || !s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) =>
        {
            Err(Error::invalid(format!("{field} must be 1-64 characters of [A-Za-z0-9_.-]")))
        }
        _ => Ok(()),
    }
}

/// Checks a recordLead body without touching the database.
pub fn check_record(input: &RecordLead) -> Result<()> {
    validate::text("leadKey", &input.lead_key, 1, 128)?;
    validate::text("eventId", &input.event_id, 1, 128)?;
    validate::time("occurredAt", input.occurred_at)?;
    validate::opt_text("label", &input.label, 200)?;
    validate::origin(&input.origin)?;
    check_ad_id("adId", &input.ad_id)?;
    check_ad_id("adsetId", &input.adset_id)?;
    check_ad_id("campaignId", &input.campaign_id)?;
    validate::opt_text("adName", &input.ad_name, 256)?;
    validate::opt_text("adsetName", &input.adset_name, 256)?;
    validate::opt_text("campaignName", &input.campaign_name, 256)?;
    validate::opt_text("clickId", &input.click_id, 512)?;
    if let Some(r) = &input.web_ref {
        web_visit::check_ref(r)?;
    }
    // `column` is not checked: a key the board cannot declare is just undeclared,
    // and an undeclared key is ignored, never an error (BOARD-03).
    Ok(())
}

pub fn check_stage(input: &SetLeadStage) -> Result<()> {
    validate::text("eventId", &input.event_id, 1, 128)?;
    validate::time("occurredAt", input.occurred_at)?;
    if input.stage.is_none() && input.column.is_none() {
        return Err(Error::invalid("give a stage, a column or both"));
    }
    if let Some(v) = input.revenue_cents {
        validate::cents("revenueCents", v)?;
        if input.stage != Some(Stage::Won) {
            return Err(Error::invalid("revenueCents goes with stage won"));
        }
    }
    Ok(())
}

fn key_of(row: &LeadRow) -> RollupKey<'_> {
    RollupKey {
        site_id: &row.site_id,
        day: row.cohort_day,
        origin: &row.origin,
        campaign_id: &row.campaign_id,
        adset_id: &row.adset_id,
        ad_id: &row.ad_id,
    }
}

/// Applies a column move if the board declares it and it is newer than the
/// lead's last move and not where the lead already is (BOARD-03/04).
fn apply_column(conn: &mut AnyConnection, row: &mut LeadRow, column: Option<&str>, at: i64) -> Result<Option<String>> {
    let Some(col) = column else { return Ok(None) };
    // A malformed key can never be declared: ignored like any undeclared one.
    if validate::key("column", col).is_err() {
        return Ok(None);
    }
    if row.column_key.as_deref() == Some(col) || row.column_at.is_some_and(|last| at < last) {
        return Ok(None);
    }
    if !pipeline::is_declared(conn, &row.site_id, col)? {
        return Ok(None);
    }
    row.column_key = Some(col.to_string());
    row.column_at = Some(at);
    Ok(Some(col.to_string()))
}

/// A form lead matches at Meta by its lead id (Conversion Leads, LA-19): its
/// events go even without a contact hash, which a conversation's need.
/// A click-to-WhatsApp lead with a click id may match by it instead
/// (business_messaging, WA-31): the queue sends it only when the site's
/// `sendClickIds` is on and Meta takes the event on that channel.
fn form_match(row: &LeadRow) -> Option<contact_hashes::ContactHashes> {
    let by_click = row.origin == reports::PAID_ORIGIN && row.click_id.as_deref().is_some_and(|c| !c.trim().is_empty());
    (Channel::of_origin(&row.origin) == Channel::Form || by_click)
        .then(|| contact_hashes::ContactHashes { ph: Vec::new(), external_id: None })
}

pub fn set_stage(
    conn: &mut AnyConnection,
    now: i64,
    site_id: &str,
    lead_key: &str,
    input: SetLeadStage,
) -> Result<Written<SetLeadStageAnswer>> {
    check_stage(&input)?;
    validate::text("leadKey", lead_key, 1, 128)?;
    sites::require(conn, site_id)?;
    let hashes = contact_hashes::accept(input.meta.as_ref(), site_id);
    let mut row = store::lock_by_key(conn, site_id, lead_key)?.ok_or_else(|| Error::not_found("unknown lead"))?;
    if store::event_seen(conn, &row.id, &input.event_id)? {
        return Ok(Written::plain(SetLeadStageAnswer { lead_id: row.id, accepted: false }));
    }
    let at = input.occurred_at;
    let mut delta = Delta::default();
    if let Some(stage) = input.stage {
        if matches!(stage, Stage::Qualified | Stage::Won) && !row.ever_qualified {
            row.ever_qualified = true;
            delta.qualified = 1;
        }
        if stage == Stage::Won {
            if !row.ever_won {
                row.ever_won = true;
                delta.won = 1;
            }
            // The sale total: a later won event replaces it, nothing adds twice.
            if let Some(value) = input.revenue_cents
                && row.won_at.is_none_or(|last| at >= last)
            {
                delta.revenue_cents = value - row.revenue_cents;
                row.revenue_cents = value;
                row.won_at = Some(at);
            }
        }
        if at >= row.stage_at {
            row.stage = stage.as_str().into();
            row.stage_at = at;
        }
    }
    let column = apply_column(conn, &mut row, input.column.as_deref(), at)?;
    if input.stage.is_none() && column.is_none() {
        return Ok(Written::plain(SetLeadStageAnswer { lead_id: row.id, accepted: false }));
    }
    store::insert_event(
        conn,
        NewLeadEvent {
            lead_id: &row.id,
            site_id,
            event_id: &input.event_id,
            stage: input.stage.map(Stage::as_str),
            column_key: column.as_deref(),
            revenue_cents: input.revenue_cents,
            occurred_at: at,
            recorded_at: now,
        },
    )?;
    row.updated_at = now;
    store::save(conn, &row)?;
    rollups::bump(conn, &key_of(&row), delta)?;
    let mut queued = false;
    let hashes = hashes.or_else(|| form_match(&row));
    if let Some(h) = &hashes {
        // Purchase: a recorded sale with a value; the value is the lead's sale total.
        if input.stage == Some(Stage::Won) && input.revenue_cents.is_some() {
            let purchase = conversions::Enqueue {
                site_id,
                lead_id: &row.id,
                event_name: conversions::PURCHASE,
                at,
                value_cents: Some(row.revenue_cents),
                crm_name: None,
            };
            queued |= conversions::enqueue(conn, now, &purchase, h)?;
        }
        if let Some(col) = &column {
            queued |= conversions::enqueue_column_event(conn, now, site_id, &row.id, col, at, h)?;
        }
    }
    Ok(Written::new(SetLeadStageAnswer { lead_id: row.id, accepted: true }, Effects::lead_write(site_id, queued)))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RemoveLeadAnswer {
    pub removed: bool,
}

/// `removeLead`; its conversions' hashes go with it (the WAL is scrubbed soon).
pub fn remove(conn: &mut AnyConnection, site_id: &str, lead_key: &str) -> Result<Written<RemoveLeadAnswer>> {
    validate::text("leadKey", lead_key, 1, 128)?;
    sites::require(conn, site_id)?;
    let row = store::lock_by_key(conn, site_id, lead_key)?.ok_or_else(|| Error::not_found("unknown lead"))?;
    let delta = Delta {
        leads: -1,
        qualified: -i64::from(row.ever_qualified),
        won: -i64::from(row.ever_won),
        revenue_cents: -row.revenue_cents,
    };
    rollups::bump(conn, &key_of(&row), delta)?;
    conversions::remove_lead(conn, &row.id)?;
    store::delete(conn, &row.id)?;
    Ok(Written::new(RemoveLeadAnswer { removed: true }, Effects { hashes_erased: true, ..Effects::default() }))
}
