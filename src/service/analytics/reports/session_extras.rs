//! What session and live rows carry beyond the session row itself (§5.2):
//! the keys of the goals the session completed and its affiliate, read once
//! for a whole page of rows.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use utoipa::ToSchema;

use crate::db::AnyConnection;
use crate::error::{Error, Result};
use crate::service::analytics::reports::funnels::LiveFunnel;
use crate::store::analytics::SessionRow;
use crate::store::analytics::definitions as defs_store;

/// The affiliate a session came through (its tag, even once removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffiliateRef {
    pub affiliate_id: String,
    pub slug: String,
}

#[derive(Debug, Clone, Default)]
pub struct Extras {
    goals: HashMap<String, Vec<String>>,
    affiliates: HashMap<String, Option<AffiliateRef>>,
    /// Per (site, visitor): the live row's funnel (rule OVR-13); live rows only.
    funnels: HashMap<(String, String), LiveFunnel>,
    /// Per (site, visitor): the latest lead the visitor became through the
    /// WhatsApp bridge (rule WA-14); live rows only.
    leads: HashMap<(String, String), LiveLead>,
}

/// The lead a live visitor became by tapping the site's WhatsApp link.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LiveLead {
    pub lead_id: String,
    pub at: i64,
}

impl Extras {
    pub fn load<'a>(conn: &mut AnyConnection, sessions: impl IntoIterator<Item = &'a SessionRow>) -> Result<Extras> {
        let sessions: Vec<&SessionRow> = sessions.into_iter().collect();
        let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
        let goals = crate::service::analytics::reports::goals::keys_by_session(conn, &ids)?;
        // Every affiliate the sessions name in one read; a removed one still names the session's tag.
        let mut named: Vec<String> = sessions.iter().filter_map(|s| s.affiliate_id.clone()).collect();
        named.sort();
        named.dedup();
        let mut affiliates: HashMap<String, Option<AffiliateRef>> = named.iter().map(|a| (a.clone(), None)).collect();
        for chunk in named.chunks(400) {
            for r in defs_store::affiliates_by_id(conn, chunk).map_err(Error::from)? {
                affiliates.insert(r.id.clone(), Some(AffiliateRef { affiliate_id: r.id, slug: r.slug }));
            }
        }
        Ok(Extras { goals, affiliates, funnels: HashMap::new(), leads: HashMap::new() })
    }

    /// `load`, plus each visitor's furthest funnel (live rows).
    pub fn load_live<'a>(
        conn: &mut AnyConnection,
        sessions: impl IntoIterator<Item = &'a SessionRow>,
    ) -> Result<Extras> {
        let sessions: Vec<&SessionRow> = sessions.into_iter().collect();
        let mut extras = Extras::load(conn, sessions.iter().copied())?;
        // Every site's funnels, step rows and WhatsApp leads with one read
        // each (per chunk of visits), not a read per site.
        let mut site_ids: Vec<String> = sessions.iter().map(|s| s.site_id.clone()).collect();
        site_ids.sort();
        site_ids.dedup();
        let mut visits: Vec<(String, String)> =
            sessions.iter().map(|s| (s.site_id.clone(), s.visitor_id.clone())).collect();
        visits.sort();
        visits.dedup();
        let wanted: HashSet<(&str, &str)> = visits.iter().map(|(s, v)| (s.as_str(), v.as_str())).collect();
        for chunk in visits.chunks(400) {
            for (who, f) in crate::service::analytics::reports::funnels::live_funnels(conn, &site_ids, chunk)? {
                if wanted.contains(&(who.0.as_str(), who.1.as_str())) {
                    extras.funnels.insert(who, f);
                }
            }
            let mut visitor_ids: Vec<String> = chunk.iter().map(|(_, v)| v.clone()).collect();
            visitor_ids.sort();
            visitor_ids.dedup();
            // Oldest first, so the latest lead of a visitor is the one kept.
            for v in crate::store::leads::visits::of_visitors(conn, &site_ids, &visitor_ids)? {
                if wanted.contains(&(v.site_id.as_str(), v.visitor_id.as_str())) {
                    extras.leads.insert((v.site_id, v.visitor_id), LiveLead { lead_id: v.lead_id, at: v.lead_at });
                }
            }
        }
        Ok(extras)
    }

    pub fn funnel(&self, s: &SessionRow) -> Option<LiveFunnel> {
        self.funnels.get(&(s.site_id.clone(), s.visitor_id.clone())).cloned()
    }

    pub fn lead(&self, s: &SessionRow) -> Option<LiveLead> {
        self.leads.get(&(s.site_id.clone(), s.visitor_id.clone())).cloned()
    }

    pub fn extend(&mut self, other: &Extras) {
        self.goals.extend(other.goals.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.affiliates.extend(other.affiliates.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.funnels.extend(other.funnels.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.leads.extend(other.leads.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    /// The keys of the goals the session completed, by key.
    pub fn goals(&self, s: &SessionRow) -> Vec<String> {
        self.goals.get(&s.id).cloned().unwrap_or_default()
    }

    pub fn affiliate(&self, s: &SessionRow) -> Option<AffiliateRef> {
        s.affiliate_id.as_ref().and_then(|a| self.affiliates.get(a)).cloned().flatten()
    }
}
