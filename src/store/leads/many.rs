//! The lead rows of many `recordLead` calls written together (issue 25):
//! one multi-row statement per table and chunk.

use super::{LeadRow, NewLeadEvent};
use crate::db::AnyConnection;
use crate::db::sql::RawQuery;

const LEAD_COLUMNS: &str = "id, site_id, lead_key, label, origin, campaign_id, adset_id, ad_id, campaign_name, \
    adset_name, ad_name, click_id, first_at, cohort_day, stage, stage_at, ever_qualified, ever_won, revenue_cents, \
    won_at, column_key, column_at, created_at, updated_at";

/// Inserts the rows whose (site, key) is new; answers the ids that went in
/// (a key already stored, or met earlier in `rows`, is left out).
pub fn insert_new(conn: &mut AnyConnection, rows: &[LeadRow]) -> diesel::QueryResult<Vec<String>> {
    crate::row! {
        struct Id {
            id: String,
        }
    }
    let mut ids = Vec::with_capacity(rows.len());
    for chunk in rows.chunks(32) {
        let mut q = RawQuery::prepared(format!("INSERT INTO leads ({LEAD_COLUMNS}) VALUES "));
        q.rows(chunk.len(), 24);
        for r in chunk {
            q.text(&r.id)
                .text(&r.site_id)
                .text(&r.lead_key)
                .opt_text(r.label.clone())
                .text(&r.origin)
                .text(&r.campaign_id)
                .text(&r.adset_id)
                .text(&r.ad_id)
                .opt_text(r.campaign_name.clone())
                .opt_text(r.adset_name.clone())
                .opt_text(r.ad_name.clone())
                .opt_text(r.click_id.clone())
                .int(r.first_at)
                .int(r.cohort_day)
                .text(&r.stage)
                .int(r.stage_at)
                .boolean(r.ever_qualified)
                .boolean(r.ever_won)
                .int(r.revenue_cents)
                .opt_int(r.won_at)
                .opt_text(r.column_key.clone())
                .opt_int(r.column_at)
                .int(r.created_at)
                .int(r.updated_at);
        }
        q.push(" ON CONFLICT (site_id, lead_key) DO NOTHING RETURNING id");
        ids.extend(q.load::<Id>(conn)?.into_iter().map(|r| r.id));
    }
    Ok(ids)
}

/// Many lead events in a statement per chunk.
pub fn insert_events(conn: &mut AnyConnection, events: &[NewLeadEvent<'_>]) -> diesel::QueryResult<usize> {
    let mut n = 0;
    for chunk in events.chunks(64) {
        let mut q = RawQuery::prepared(
            "INSERT INTO lead_events (lead_id, site_id, event_id, stage, column_key, revenue_cents, occurred_at, \
             recorded_at) VALUES ",
        );
        q.rows(chunk.len(), 8);
        for e in chunk {
            q.text(e.lead_id)
                .text(e.site_id)
                .text(e.event_id)
                .opt_text(e.stage)
                .opt_text(e.column_key)
                .opt_int(e.revenue_cents)
                .int(e.occurred_at)
                .int(e.recorded_at);
        }
        n += q.execute(conn)?;
    }
    Ok(n)
}
