//! The sites' form-lead handlers (`meta_form_handlers`): where the answers
//! are delivered, their secrets sealed.

use super::*;

crate::row! {
    /// The site's form-lead handler: where answers are delivered, its secret sealed.
    #[derive(Debug, Clone)]
    pub struct HandlerRow {
        pub site_id: String,
        pub url: String,
        pub sealed_secret: String,
    }
}

pub fn handler(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Option<HandlerRow>> {
    let rows: Vec<HandlerRow> =
        RawQuery::new("SELECT site_id, url, sealed_secret FROM meta_form_handlers WHERE site_id = ?")
            .text(site_id)
            .load(conn)?;
    Ok(rows.into_iter().next())
}

/// The sites of `sites` that have a handler.
pub fn sites_with_handler(conn: &mut AnyConnection, sites: &[String]) -> QueryResult<Vec<String>> {
    if sites.is_empty() {
        return Ok(Vec::new());
    }
    crate::row! {
        struct Site {
            site_id: String,
        }
    }
    let sql = format!("SELECT site_id FROM meta_form_handlers WHERE site_id IN {}", placeholders(sites.len()));
    let rows: Vec<Site> = RawQuery::new(sql).texts(sites).load(conn)?;
    Ok(rows.into_iter().map(|r| r.site_id).collect())
}

pub fn set_handler(conn: &mut AnyConnection, site_id: &str, url: &str, sealed: &str, now: i64) -> QueryResult<()> {
    RawQuery::new(
        "INSERT INTO meta_form_handlers (site_id, url, sealed_secret, updated_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT (site_id) DO UPDATE SET url = excluded.url, sealed_secret = excluded.sealed_secret, \
         updated_at = excluded.updated_at",
    )
    .text(site_id)
    .text(url)
    .text(sealed)
    .int(now)
    .execute(conn)?;
    Ok(())
}

/// Removes the site's handler; whether there was one.
pub fn delete_handler(conn: &mut AnyConnection, site_id: &str) -> QueryResult<bool> {
    Ok(RawQuery::new("DELETE FROM meta_form_handlers WHERE site_id = ?").text(site_id).execute(conn)? > 0)
}

/// Clears `lastError` on the site's Pages where it starts with `code` (a
/// handler set ends `HANDLER_MISSING`); the Pages touched.
pub fn clear_page_errors(conn: &mut AnyConnection, site_id: &str, code: &str, now: i64) -> QueryResult<Vec<String>> {
    let pattern = format!("{code}%");
    let links: Vec<PageLinkRow> = page_links_of_sites(conn, &[site_id.to_string()])?;
    RawQuery::new(
        "UPDATE meta_page_links SET last_error = NULL, updated_at = ? WHERE site_id = ? AND last_error LIKE ?",
    )
    .int(now)
    .text(site_id)
    .text(&pattern)
    .execute(conn)?;
    Ok(links.into_iter().map(|l| l.page_id).collect())
}

/// An attempt failed: the next one at `next_at`, or none (`failed`) when `next_at` is None.
pub fn mark_attempt_failed(
    conn: &mut AnyConnection,
    id: &str,
    error: &str,
    next_at: Option<i64>,
    now: i64,
) -> QueryResult<()> {
    RawQuery::new(
        "UPDATE meta_lead_receipts SET status = ?, attempts = attempts + 1, next_attempt_at = ?, last_error = ?, \
         updated_at = ? WHERE id = ?",
    )
    .text(if next_at.is_some() { PENDING } else { FAILED })
    .int(next_at.unwrap_or(now))
    .text(error)
    .int(now)
    .text(id)
    .execute(conn)?;
    Ok(())
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct PageCounts {
        pub page_id: String,
        pub pending: i64,
        pub failed: i64,
    }
}

/// Pending and failed receipts per Page of these sites.
pub fn counts_of_sites(conn: &mut AnyConnection, sites: &[String]) -> QueryResult<Vec<PageCounts>> {
    if sites.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT page_id, CAST(SUM(CASE WHEN status = ? THEN 1 ELSE 0 END) AS BIGINT) AS pending, \
         CAST(SUM(CASE WHEN status = ? THEN 1 ELSE 0 END) AS BIGINT) AS failed \
         FROM meta_lead_receipts WHERE site_id IN {} GROUP BY page_id",
        placeholders(sites.len())
    );
    RawQuery::new(sql).text(PENDING).text(FAILED).texts(sites).load(conn)
}

/// The site's forms (of every Page linked to it), by name.
pub fn forms_of_site(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<FormRow>> {
    RawQuery::new(
        "SELECT f.page_id, f.form_id, f.site_id, f.name, f.status, f.questions, f.rules, f.watermark \
         FROM meta_forms f JOIN meta_page_links l ON l.page_id = f.page_id AND l.site_id = f.site_id \
         WHERE f.site_id = ? ORDER BY f.name, f.form_id",
    )
    .text(site_id)
    .load(conn)
}

/// Sets (or clears) a form's rules; whether the site has that form.
pub fn set_form_rules(
    conn: &mut AnyConnection,
    site_id: &str,
    form_id: &str,
    rules: Option<&str>,
) -> QueryResult<bool> {
    let q = RawQuery::new("UPDATE meta_forms SET rules = ? WHERE site_id = ? AND form_id = ?")
        .opt_text(rules.map(str::to_string))
        .text(site_id)
        .text(form_id)
        .execute(conn)?;
    Ok(q > 0)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct FormCount {
        pub form_id: String,
        pub leads: i64,
    }
}

/// Leads made per form of the site whose creation time is at or after `since`.
pub fn leads_per_form(conn: &mut AnyConnection, site_id: &str, since: i64) -> QueryResult<Vec<FormCount>> {
    RawQuery::new(
        "SELECT form_id, CAST(COUNT(*) AS BIGINT) AS leads FROM meta_lead_receipts \
         WHERE site_id = ? AND form_id IS NOT NULL AND lead_id IS NOT NULL \
         AND COALESCE(created_time, received_at) >= ? GROUP BY form_id",
    )
    .text(site_id)
    .int(since)
    .load(conn)
}

crate::row! {
    /// A form's leads of a cohort range (`metaFormsReport`).
    #[derive(Debug, Clone)]
    pub struct FormCohort {
        pub form_id: String,
        pub leads: i64,
        pub qualified: i64,
        pub won: i64,
        pub revenue_cents: i64,
        pub paid_leads: i64,
        pub paid_qualified: i64,
        pub paid_won: i64,
        pub paid_revenue_cents: i64,
    }
}

/// Per form, the site's form leads first seen in `[from, to]` and their
/// outcomes; `paid_origin` marks what an ad bought. Form leads are the site's
/// receipts that became leads: a small share of its leads, read through the
/// receipts' site index and the leads' primary key.
pub fn form_cohorts(
    conn: &mut AnyConnection,
    site_id: &str,
    from: i64,
    to: i64,
    paid_origin: &str,
) -> QueryResult<Vec<FormCohort>> {
    let mut q = RawQuery::new(
        "SELECT r.form_id AS form_id, CAST(COUNT(*) AS BIGINT) AS leads, \
         CAST(SUM(CASE WHEN l.ever_qualified THEN 1 ELSE 0 END) AS BIGINT) AS qualified, \
         CAST(SUM(CASE WHEN l.ever_won THEN 1 ELSE 0 END) AS BIGINT) AS won, \
         CAST(SUM(l.revenue_cents) AS BIGINT) AS revenue_cents, \
         CAST(SUM(CASE WHEN l.origin = ? THEN 1 ELSE 0 END) AS BIGINT) AS paid_leads, \
         CAST(SUM(CASE WHEN l.origin = ? AND l.ever_qualified THEN 1 ELSE 0 END) AS BIGINT) AS paid_qualified, \
         CAST(SUM(CASE WHEN l.origin = ? AND l.ever_won THEN 1 ELSE 0 END) AS BIGINT) AS paid_won, \
         CAST(SUM(CASE WHEN l.origin = ? THEN l.revenue_cents ELSE 0 END) AS BIGINT) AS paid_revenue_cents \
         FROM meta_lead_receipts r JOIN leads l ON l.id = r.lead_id \
         WHERE r.site_id = ? AND r.form_id IS NOT NULL AND l.first_at >= ? AND l.first_at <= ? \
         GROUP BY r.form_id",
    );
    q.text(paid_origin).text(paid_origin).text(paid_origin).text(paid_origin).text(site_id).int(from).int(to);
    q.load(conn)
}

crate::row! {
    #[derive(Debug, Clone)]
    pub struct FormAd {
        pub form_id: String,
        pub ad_id: String,
    }
}

/// The ads that brought leads through each of the site's forms (any time).
pub fn form_ads(conn: &mut AnyConnection, site_id: &str) -> QueryResult<Vec<FormAd>> {
    RawQuery::new(
        "SELECT DISTINCT r.form_id AS form_id, l.ad_id AS ad_id FROM meta_lead_receipts r \
         JOIN leads l ON l.id = r.lead_id WHERE r.site_id = ? AND r.form_id IS NOT NULL AND l.ad_id <> ''",
    )
    .text(site_id)
    .load(conn)
}
