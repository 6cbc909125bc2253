//! What one Page's actor runs ([`run_page`], LEADADS.md §5): under the
//! Page's lease, its due receipts oldest first. While the site has no
//! handler nothing is fetched (`HANDLER_MISSING`, LA-10). Each lead is
//! fetched from Meta with the Page token and recorded through the leads
//! service as a form lead (`leadKey "fbl_" + leadgen id`, origin `lead_form`
//! or `lead_form_organic`), the lead and the receipt's `lead_id` in one
//! transaction, so a leadgen id makes exactly one lead (LA-11); then its
//! answers are delivered to the handler ([`handler`], LA-12), a retry
//! fetching them again (they are never stored). A failed fetch waits its
//! step of `RASTRO_META_LEADS_RETRY_STEPS` (the last repeats); a lead Meta no
//! longer serves ends `LEAD_EXPIRED`; a refused Page token or a missing
//! permission stops the Page with its code, its receipts waiting until the
//! owner's Pages are listed again (`metaPages`, which reads fresh tokens).
//!
//! The answers live in this function's memory only: the phone reaches the
//! lead as its SHA-256 (the contact-hash path, for the Conversions API) and
//! nothing else of them is written or logged (LA-08).

use sha2::{Digest, Sha256};

use super::handler::{self, Delivery};
use super::{page_fault, reconcile};
use crate::codes::Fault;
use crate::crypto::Identity;
use crate::error::{Error, Result};
use crate::meta::graph::{ErrorClass, FormLead, GraphError};
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::service::leads::{self, RecordLead};
use crate::store::meta::lead_ads::{self as store, FormRow, PageLinkRow, ReceiptRow};

/// Receipts read per batch of a run.
const BATCH: i64 = 50;
/// Meta keeps a lead 90 days: an older receipt can no longer be fetched.
const LEAD_KEPT_MS: i64 = 90 * 86_400_000;
/// Meta's subcode for a lead it no longer serves (with code 100).
const EXPIRED_SUBCODE: i64 = 33;

/// The origins of form leads (LEADADS.md §5.3).
pub const PAID_FORM_ORIGIN: &str = leads::Channel::FORM_ORIGINS[0];
pub const ORGANIC_FORM_ORIGIN: &str = leads::Channel::FORM_ORIGINS[1];

/// What one run over a Page's receipts did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PageRound {
    /// Receipts the reconciliation made (leads whose webhook never came).
    pub found: u64,
    /// Receipts that became leads.
    pub recorded: u64,
    /// Receipts whose lead the site's handler took.
    pub delivered: u64,
    /// Receipts whose attempt failed and that wait for the next one.
    pub retried: u64,
    /// Receipts that ended without a lead.
    pub failed: u64,
    /// When the Page next needs a look (None: only the supervisor's sweep looks again).
    pub next_due: Option<i64>,
    /// The Page stopped on its token or permission (`lastError`): its receipts wait.
    pub stopped: bool,
    /// The site has no handler (`HANDLER_MISSING`): nothing was fetched, the receipts wait.
    pub held: bool,
}

impl PageRound {
    pub fn add(&mut self, o: &PageRound) {
        self.found += o.found;
        self.recorded += o.recorded;
        self.delivered += o.delivered;
        self.retried += o.retried;
        self.failed += o.failed;
        self.next_due = match (self.next_due, o.next_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.stopped |= o.stopped;
        self.held |= o.held;
    }

    pub fn worked(&self) -> bool {
        self.found + self.recorded + self.delivered + self.retried + self.failed > 0
    }
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The wait after the `attempts`-th failed attempt (1-based): its step, the last repeating.
pub fn retry_wait(cx: &Context, attempts: i64) -> i64 {
    let steps = &cx.config.meta_leads_retry_steps;
    let i = usize::try_from(attempts.max(1) - 1).unwrap_or(usize::MAX).min(steps.len().saturating_sub(1));
    steps.get(i).map_or(60_000, |d| ms(*d))
}

/// The Pages with a pending receipt or a reconciliation due (the supervisor's sweep).
pub async fn pages_with_work(cx: &Context) -> Result<Vec<String>> {
    let before = cx.now().saturating_sub(reconcile::interval_ms(cx));
    cx.read(move |c| Ok(store::pages_with_work(c, before)?)).await
}

/// When the Page's next reconciliation is due.
async fn next_reconciliation(cx: &Context, page_id: &str) -> Result<Option<i64>> {
    let (page, every) = (page_id.to_string(), reconcile::interval_ms(cx));
    cx.read(move |c| {
        Ok(store::page_link(c, &page)?.map(|l| l.last_reconciled_at.map_or(0, |at| at.saturating_add(every))))
    })
    .await
}

/// When the Page next needs a look: its next receipt due, or its next reconciliation.
async fn next_due(cx: &Context, page_id: &str) -> Result<Option<i64>> {
    let (page, every) = (page_id.to_string(), reconcile::interval_ms(cx));
    cx.read(move |c| {
        let receipt = store::next_due(c, &page)?;
        let reconcile =
            store::page_link(c, &page)?.map(|l| l.last_reconciled_at.map_or(0, |at| at.saturating_add(every)));
        Ok(match (receipt, reconcile) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    })
    .await
}

/// The lead a fetched form lead becomes. `answers` give the phone's hash only.
fn lead_input(r: &ReceiptRow, lead: &FormLead) -> RecordLead {
    let paid = lead.ad_id.is_some() && !lead.is_organic;
    let origin = if paid { PAID_FORM_ORIGIN } else { ORGANIC_FORM_ORIGIN };
    let occurred = lead.created_ms.or(r.created_time).unwrap_or(r.received_at);
    let key = format!("fbl_{}", r.leadgen_id);
    let mut input = RecordLead::new(key.clone(), format!("{key}-new"), occurred, origin);
    if paid {
        input.ad_id = lead.ad_id.clone();
        input.adset_id = lead.adset_id.clone();
        input.campaign_id = lead.campaign_id.clone();
    }
    let phone = lead.answer("phone_number").or_else(|| lead.answer("phone"));
    let digits: String = phone.unwrap_or_default().chars().filter(char::is_ascii_digit).collect();
    if digits.len() >= 8 {
        let hash: String = Sha256::digest(digits.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        input.meta = Some(serde_json::json!({"ph": [hash]}));
    }
    input
}

/// How a failed fetch ends for its receipt: retried, failed, or the Page stopped.
enum Outcome {
    Retry(String),
    Fail(String),
    StopPage(String),
}

fn outcome(e: &GraphError, r: &ReceiptRow, now: i64) -> Outcome {
    if e.code == Some(100) && e.subcode == Some(EXPIRED_SUBCODE) {
        return Outcome::Fail(Fault::LeadExpired.with("Meta no longer serves this lead"));
    }
    if let Some(why) = page_fault(e) {
        return Outcome::StopPage(why);
    }
    if now - r.created_time.unwrap_or(r.received_at) > LEAD_KEPT_MS {
        return Outcome::Fail(Fault::LeadExpired.with("older than the 90 days Meta keeps a lead"));
    }
    Outcome::Retry(e.class.fault().with("fetching the lead failed; retried"))
}

/// One run over the Page's due receipts (see the module). Another process
/// holding the Page makes it a run that does nothing.
pub async fn run_page(cx: &Context, page_id: &str) -> Result<PageRound> {
    let mut round = PageRound::default();
    let now = cx.now();
    // A read first: most wakes find nothing due, and a read costs the writer nothing.
    round.next_due = next_due(cx, page_id).await?;
    if round.next_due.is_none_or(|at| at > now) {
        return Ok(round);
    }
    let owner = crate::ids::run_id(crate::ids::RunKind::LeadFetch)?;
    let until = now.saturating_add(ms(cx.config.meta_leads_lease));
    let (page, o) = (page_id.to_string(), owner.clone());
    let taken = cx
        .write(move |c| Ok(Written::new(store::take_page_lease(c, &page, &o, until, now)?, Effects::quiet())))
        .await?;
    if !taken {
        round.next_due = Some(until);
        return Ok(round);
    }
    round.next_due = None;
    let result = work(cx, page_id, &owner, until, &mut round).await;
    let (page, o) = (page_id.to_string(), owner.clone());
    cx.write(move |c| Ok(Written::new(store::release_page_lease(c, &page, &o)?, Effects::quiet()))).await?;
    result?;
    // Ids and counts only: never a lead's data.
    tracing::debug!(
        page_id,
        recorded = round.recorded,
        delivered = round.delivered,
        retried = round.retried,
        failed = round.failed,
        "lead ads: a Page's run"
    );
    if round.stopped {
        round.next_due = None;
    } else if round.held {
        // Receipts wait for a handler (setting one wakes the Page): only the reconciliation is due.
        round.next_due = next_reconciliation(cx, page_id).await?;
    } else {
        // Set by `work` only when a reconciliation failed: tried again after its wait, not at once.
        let retry = round.next_due.take();
        let (next, now) = (next_due(cx, page_id).await?, cx.now());
        round.next_due = match (next, retry) {
            (Some(at), Some(r)) if at <= now => Some(r),
            (Some(at), Some(r)) => Some(at.min(r)),
            (next, retry) => next.or(retry),
        };
    }
    Ok(round)
}

/// The run's work under the lease (held until `until`).
async fn work(cx: &Context, page_id: &str, owner: &str, until: i64, round: &mut PageRound) -> Result<()> {
    let page = page_id.to_string();
    let Some((link, row, forms)) = cx
        .read(move |c| {
            let Some(link) = store::page_link(c, &page)? else { return Ok(None) };
            let row = store::page(c, &link.owner_key, &page)?;
            let forms = store::forms_of_page(c, &page)?;
            Ok(Some((link, row, forms)))
        })
        .await?
    else {
        return Ok(());
    };
    // A Page stopped on its token or permission waits for the Pages to be listed again (a reconnect).
    if link.last_error.as_deref().and_then(Fault::of).is_some_and(super::stops_page) {
        round.stopped = true;
        return Ok(());
    }
    let key = cx.secrets()?;
    let token = match row.as_ref().map(|r| key.open(&r.sealed_token, Identity::Page(&r.owner_key, page_id))) {
        Some(Ok(t)) => t,
        _ => {
            let why = Fault::PageTokenInvalid.with("the Page's token is gone or sealed under another key: list again");
            round.stopped = true;
            return stop_page(cx, page_id, why).await;
        }
    };
    if reconcile::due(cx, &link, cx.now()) {
        match reconcile::reconcile_page(cx, &link, &token).await? {
            Ok(found) => round.found += found,
            Err(e) => {
                if let Some(why) = page_fault(&e) {
                    round.stopped = true;
                    return stop_page(cx, page_id, why).await;
                }
                tracing::warn!(page_id, code = e.class.code_str(), "lead ads: reading a form's leads failed; retried");
                round.next_due = Some(cx.now().saturating_add(retry_wait(cx, 1)));
            }
        }
    }
    // Without a handler nothing is fetched: the receipts wait for one (LA-10).
    let handler = match handler::of_site(cx, &link.site_id).await? {
        Ok(h) => h,
        Err(why) => {
            round.held = true;
            if link.last_error.as_deref() != Some(why.as_str()) {
                stop_page(cx, page_id, why).await?;
            }
            return Ok(());
        }
    };
    // A delivery may wait its whole timeout: none starts that the lease could not see through.
    let margin =
        ms(cx.config.meta_leads_handler_timeout).saturating_add(30_000).min(ms(cx.config.meta_leads_lease) / 2);
    loop {
        let (page, now) = (page_id.to_string(), cx.now());
        let due = cx.read(move |c| Ok(store::due_receipts(c, &page, now, BATCH)?)).await?;
        if due.is_empty() {
            return Ok(());
        }
        for r in due {
            if cx.now() > until.saturating_sub(margin) {
                // The next run, under a fresh lease, goes on at once.
                round.next_due = Some(cx.now());
                return Ok(());
            }
            let fetched = cx.graph.form_lead(&token, &r.leadgen_id).await;
            let now = cx.now();
            let lead = match fetched {
                Ok(lead) => lead.value,
                Err(e) => {
                    match outcome(&e, &r, now) {
                        Outcome::Fail(why) => {
                            end_attempt(cx, &r.id, &why, None).await?;
                            round.failed += 1;
                        }
                        Outcome::Retry(why) => {
                            let mut wait = retry_wait(cx, r.attempts + 1);
                            if e.class == ErrorClass::Throttled {
                                wait = wait.max(ms(cx.config.sync_rate_limit_wait));
                            }
                            end_attempt(cx, &r.id, &why, Some(now.saturating_add(wait))).await?;
                            round.retried += 1;
                            if matches!(e.class, ErrorClass::Throttled | ErrorClass::Transient) {
                                // Meta is away or throttling: the rest of the Page waits for the next run.
                                return Ok(());
                            }
                        }
                        Outcome::StopPage(why) => {
                            round.stopped = true;
                            return stop_page(cx, page_id, why).await;
                        }
                    }
                    continue;
                }
            };
            // The lead first (once per leadgen id, LA-11), then its delivery.
            let (lead_id, attempts) = match &r.lead_id {
                Some(id) => (id.clone(), r.attempts),
                None => match make_lead(cx, page_id, owner, &link, &r, &lead, &forms).await? {
                    Some(id) => {
                        round.recorded += 1;
                        (id, 0)
                    }
                    None => {
                        round.failed += 1;
                        continue;
                    }
                },
            };
            let form = forms.iter().find(|f| Some(&f.form_id) == r.form_id.as_ref().or(lead.form_id.as_ref()));
            let body = handler::body(&r, &lead_id, &lead, form);
            drop(lead);
            match handler::deliver(cx, &handler, &r.id, body).await {
                Delivery::Delivered => {
                    let (page, owner_s, id, now) = (page_id.to_string(), owner.to_string(), r.id.clone(), cx.now());
                    cx.write(move |c| {
                        if !store::holds_page(c, &page, &owner_s, now)? {
                            return Err(Error::unavailable("the Page's run outlived its lease"));
                        }
                        store::mark_delivered(c, &id, now)?;
                        Ok(Written::new((), Effects::default()))
                    })
                    .await?;
                    round.delivered += 1;
                }
                Delivery::Refused(status) => {
                    let why = Fault::HandlerRefused.with(format!("the handler answered {status}"));
                    end_attempt(cx, &r.id, &why, None).await?;
                    round.failed += 1;
                }
                Delivery::Unavailable(why) => {
                    let steps = &cx.config.capi_retry_steps;
                    let step = usize::try_from(attempts).unwrap_or(usize::MAX);
                    match steps.get(step) {
                        Some(wait) => {
                            let why = Fault::HandlerUnavailable.with(format!("{why}; retried"));
                            end_attempt(cx, &r.id, &why, Some(cx.now().saturating_add(ms(*wait)))).await?;
                            round.retried += 1;
                        }
                        None => {
                            let why = Fault::HandlerUnavailable.with(format!("{why}, after every retry"));
                            end_attempt(cx, &r.id, &why, None).await?;
                            round.failed += 1;
                        }
                    }
                    // The handler is away: the Page's other receipts wait for the next run.
                    return Ok(());
                }
            }
        }
    }
}

/// Records the fetched lead and ties the receipt to it, in one transaction
/// under the lease: its id, or None when the leads service refuses it (the
/// receipt then fails visibly and for good).
async fn make_lead(
    cx: &Context,
    page_id: &str,
    owner: &str,
    link: &PageLinkRow,
    r: &ReceiptRow,
    lead: &FormLead,
    forms: &[FormRow],
) -> Result<Option<String>> {
    let mut input = lead_input(r, lead);
    // The form's rules give the column, label and stage (LA-17), from the answers in memory.
    let form = forms.iter().find(|f| Some(&f.form_id) == r.form_id.as_ref().or(lead.form_id.as_ref()));
    let ruled = super::forms::apply(form.and_then(super::forms::rules_of).as_ref(), &lead.answers);
    input.column = ruled.column;
    input.label = ruled.label;
    let qualify = ruled.qualified.then(|| leads::SetLeadStage {
        stage: Some(leads::Stage::Qualified),
        column: None,
        revenue_cents: None,
        event_id: format!("fbl_{}-qualified", r.leadgen_id),
        occurred_at: input.occurred_at,
        meta: None,
    });
    let (page, owner_s, id, site, now) =
        (page_id.to_string(), owner.to_string(), r.id.clone(), r.site_id.clone(), cx.now());
    let had_error = link.last_error.is_some();
    let made = cx
        .write(move |c| {
            if !store::holds_page(c, &page, &owner_s, now)? {
                return Err(Error::unavailable("the Page's run outlived its lease"));
            }
            let key = input.lead_key.clone();
            let made = leads::record(c, now, &site, input)?;
            let mut effects = made.effects;
            if let Some(stage) = qualify {
                effects = effects.merge(leads::set_stage(c, now, &site, &key, stage)?.effects);
            }
            store::mark_made(c, &id, &made.value.lead_id, now)?;
            if had_error {
                store::set_page_error(c, &page, None, now)?;
            }
            Ok(Written::new(made.value.lead_id.clone(), effects))
        })
        .await;
    match made {
        Ok(id) => Ok(Some(id)),
        Err(e) if e.code == crate::error::Code::InvalidArgument => {
            // A lead the leads service refuses can never be made: visible, not retried.
            let why = Fault::MetaInvalid.with("the lead Meta answered cannot be recorded");
            end_attempt(cx, &r.id, &why, None).await?;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

async fn end_attempt(cx: &Context, id: &str, why: &str, next_at: Option<i64>) -> Result<()> {
    let (id, why, now) = (id.to_string(), why.to_string(), cx.now());
    cx.write(move |c| Ok(Written::new(store::mark_attempt_failed(c, &id, &why, next_at, now)?, Effects::default())))
        .await
}

/// The Page stops with `why`; its receipts wait (a reconnect resumes them).
async fn stop_page(cx: &Context, page_id: &str, why: String) -> Result<()> {
    let (page, now) = (page_id.to_string(), cx.now());
    cx.write(move |c| Ok(Written::new(store::set_page_error(c, &page, Some(&why), now)?, Effects::default()))).await
}
