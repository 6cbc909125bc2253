//! The reconciliation (LEADADS.md §4, rule LA-09): every
//! `RASTRO_META_LEADS_RECONCILE` each form of a linked Page is read from Meta
//! (`GET /{form-id}/leads`, time created after the form's watermark minus 10
//! minutes; the first read goes back the 90 days Meta keeps a lead). Every
//! leadgen id not known yet becomes a receipt (`source: reconcile`), in the
//! transaction that moves the form's watermark, so the watermark moves only
//! with the read's receipts committed; a failed read moves nothing and the
//! Page's next run reads again. Runs inside the Page's run, under its lease.

use crate::error::Result;
use crate::meta::graph::GraphError;
use crate::secret::Secret;
use crate::service::context::Context;
use crate::service::effects::{Effects, Written};
use crate::store::meta::lead_ads::{self as store, NewReceipt, PageLinkRow};

/// The overlap of each read with the one before (Meta's lag in listing a lead).
pub const OVERLAP_MS: i64 = 10 * 60_000;
/// The first read of a form: Meta keeps a lead 90 days.
pub const FIRST_READ_MS: i64 = 90 * 86_400_000;

pub fn interval_ms(cx: &Context) -> i64 {
    i64::try_from(cx.config.meta_leads_reconcile.as_millis()).unwrap_or(i64::MAX)
}

/// Whether the Page's reconciliation is due at `now`.
pub fn due(cx: &Context, link: &PageLinkRow, now: i64) -> bool {
    link.last_reconciled_at.is_none_or(|at| at.saturating_add(interval_ms(cx)) <= now)
}

/// Reads every form of the Page; answers the receipts it made, or the Graph
/// failure that stopped it (the forms read before it keep their receipts and watermarks).
pub async fn reconcile_page(
    cx: &Context,
    link: &PageLinkRow,
    token: &Secret,
) -> Result<std::result::Result<u64, GraphError>> {
    let page = link.page_id.clone();
    let forms = cx.read(move |c| Ok(store::forms_of_page(c, &page)?)).await?;
    let mut found = 0;
    for form in forms {
        let started = cx.now();
        let since = form.watermark.map_or(started - FIRST_READ_MS, |w| w - OVERLAP_MS);
        let stubs = match cx.graph.form_leads(token, &form.form_id, since.div_euclid(1000)).await {
            Ok(g) => g.value,
            Err(e) => return Ok(Err(e)),
        };
        let ids: Vec<String> = stubs.iter().map(|_| crate::ids::time_ordered("lr_", started)).collect::<Result<_>>()?;
        let (site, page, form_id) = (link.site_id.clone(), link.page_id.clone(), form.form_id.clone());
        // Every lead created before the read started was listed: the watermark is at least that.
        let watermark = stubs.iter().filter_map(|s| s.created_ms).fold(started, i64::max);
        found += cx
            .write(move |c| {
                let mut effects = Effects::quiet();
                let mut made = 0;
                for (stub, id) in stubs.into_iter().zip(ids) {
                    let receipt = NewReceipt {
                        id,
                        leadgen_id: stub.id,
                        site_id: site.clone(),
                        page_id: page.clone(),
                        form_id: Some(form_id.clone()),
                        ad_id: stub.ad_id,
                        created_time: stub.created_ms,
                        received_at: started,
                        source: "reconcile",
                    };
                    if store::insert_receipt(c, &receipt)? {
                        made += 1;
                    }
                }
                store::set_watermark(c, &page, &form_id, watermark)?;
                effects.changes_cached_reads = made > 0;
                Ok(Written::new(made, effects))
            })
            .await?;
    }
    let (page, now) = (link.page_id.clone(), cx.now());
    cx.write(move |c| Ok(Written::new(store::set_reconciled(c, &page, now)?, Effects::default()))).await?;
    Ok(Ok(found))
}
