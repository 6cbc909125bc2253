//! The Meta reads as the operator's screens show them: amounts written out
//! in the site's currency (rule METRIC-02), computed here, never on the page.

use serde::Serialize;

use super::conversions::{self, ConversionRow};
use super::sync::{self, UnlinkPreview};
use crate::db::AnyConnection;
use crate::error::Result;
use crate::service::leads::metrics::format_money;
use crate::service::sites;

/// A conversion of the feed: its site and its value written out.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedRow {
    #[serde(flatten)]
    pub row: ConversionRow,
    pub site_id: String,
    pub value_fmt: String,
}

/// The conversions of `site_ids`' pixels, newest first, at most `limit` (1–50).
pub fn conversions_feed(conn: &mut AnyConnection, site_ids: &[String], limit: i64) -> Result<Vec<FeedRow>> {
    let mut all = Vec::new();
    for id in site_ids {
        let currency = sites::get(conn, id)?.currency;
        for row in conversions::list(conn, id, Some(limit), None, None)? {
            let value_fmt = format_money(row.value_cents, &currency);
            all.push(FeedRow { row, site_id: id.clone(), value_fmt });
        }
    }
    all.sort_by(|a, b| b.row.created_at.cmp(&a.row.created_at).then(b.row.event_id.cmp(&a.row.event_id)));
    all.truncate(limit.clamp(1, 50) as usize);
    Ok(all)
}

/// `metaUnlinkPreview` with the spend written out.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormattedUnlinkPreview {
    #[serde(flatten)]
    pub preview: UnlinkPreview,
    pub spend: String,
}

pub fn unlink_preview(conn: &mut AnyConnection, site_id: &str, account: &str) -> Result<FormattedUnlinkPreview> {
    let preview = sync::unlink_preview(conn, site_id, account)?;
    let spend = format_money(Some(preview.spend_cents), preview.currency.as_deref().unwrap_or("BRL"));
    Ok(FormattedUnlinkPreview { preview, spend })
}
