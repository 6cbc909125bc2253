//! The closed sets of web analytics, each an enum whose strings are written
//! here and nowhere else: they are stored in rows (`tier`, `dim`, `kind`,
//! `data_class`), read by the tracker and the import (a line's `type`) and
//! answered by the API, so a spelling must never drift between two files.
//! `as_str` gives the exact stored text, `parse` reads it back, and serde
//! writes the same strings. The store below takes these as plain text (it may
//! not import a service), so a query that needs one binds `as_str()`.

use crate::closed_set;

closed_set! {
    /// A rollup's bucket size (rules OVR-03, OVR-05): the UTC hour, the UTC
    /// day, and the UTC month (breakdowns and visitor sets only, from each
    /// site's `web_month_tier.complete_from`).
    pub enum Tier {
        Hour = "h",
        Day = "d",
        Month = "m",
    }
}

impl Tier {
    /// The tiers that keep counters (`web_counters`, `web_goal_counters`); the
    /// month tier keeps breakdowns and visitor sets only.
    pub const fn counted(self) -> bool {
        match self {
            Tier::Hour | Tier::Day => true,
            Tier::Month => false,
        }
    }
}

/// Tiers key the rollups' pending deltas (ordered maps); ordering them by
/// their stored text keeps the order those rows were written in when the tier
/// was a string, so PostgreSQL takes row locks in the order it did before.
impl Ord for Tier {
    fn cmp(&self, other: &Tier) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Tier {
    fn partial_cmp(&self, other: &Tier) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

closed_set! {
    /// A breakdown dimension (the overview's panels; `web_breakdowns.dim` and
    /// `web_visitor_sets.dim`). A `null` key is stored as ''.
    pub enum Dimension {
        Page = "page",
        Entry = "entry",
        Source = "source",
        Referrer = "referrer",
        Medium = "medium",
        Campaign = "campaign",
        Country = "country",
        Device = "device",
        Browser = "browser",
        /// A custom event's name.
        Event = "event",
        /// The visitor sets of a whole bucket (key '').
        All = "",
        /// Conversions recorded in the ledger, per session campaign (§5.3).
        CampaignConversions = "campaign.conversions",
        /// Their revenue in cents, per session campaign.
        CampaignRevenue = "campaign.revenue",
        /// Leads matched to a visit (the WhatsApp bridge, rule WA-16), per
        /// the visit's source, counted on the lead's time.
        SourceLeads = "source.leads",
        /// The same per the visit's campaign.
        CampaignLeads = "campaign.leads",
    }
}

/// Dimensions key the rollups' pending deltas too: ordered by stored text,
/// as they were when they were strings.
impl Ord for Dimension {
    fn cmp(&self, other: &Dimension) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for Dimension {
    fn partial_cmp(&self, other: &Dimension) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

closed_set! {
    /// A stored event's kind (`web_events.kind`), and what a goal or funnel
    /// step matches: a pageview or a custom event. Engagement and vitals are
    /// measures of a stored pageview, not events of their own.
    pub enum EventKind {
        Pageview = "pageview",
        /// A custom event (its name in `name`).
        Event = "event",
    }
}

impl EventKind {
    /// The line type an export writes a stored event as (the same string).
    pub const fn line_type(self) -> LineType {
        match self {
            EventKind::Pageview => LineType::Pageview,
            EventKind::Event => LineType::Event,
        }
    }
}

closed_set! {
    /// A line's `type` in a tracker batch, an import and an export.
    pub enum LineType {
        Pageview = "pageview",
        /// A custom event.
        Event = "event",
        /// Engaged time of an earlier pageview.
        Engagement = "engagement",
        /// Web vitals of an earlier pageview.
        Vitals = "vitals",
    }
}

closed_set! {
    /// What an outbox row tells the report actor to count
    /// (`web_outbox.kind`): written at acceptance, applied by the rollups.
    pub enum Change {
        Pageview = "pageview",
        Event = "event",
        /// A pageview's engaged time grew.
        Engagement = "engagement",
        /// One vital of a pageview changed (the metric in `name`).
        Vital = "vital",
    }
}

impl Change {
    /// The change a newly stored event makes.
    pub const fn of(kind: EventKind) -> Change {
        match kind {
            EventKind::Pageview => Change::Pageview,
            EventKind::Event => Change::Event,
        }
    }

    /// Pageviews and custom events make a visitor count (rule OVR-06).
    pub const fn counts_visitor(self) -> bool {
        match self {
            Change::Pageview | Change::Event => true,
            Change::Engagement | Change::Vital => false,
        }
    }
}

closed_set! {
    /// A retention data class (rules RET-01 to RET-10), in the order `jobs`
    /// and `backlog` list them (rule RET-05); `web_retention_jobs.data_class`.
    pub enum RetentionClass {
        Events = "events",
        Sessions = "sessions",
        Conversions = "conversions",
        Profiles = "profiles",
        Aggregates = "aggregates",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_round_trip;

    #[test]
    fn every_word_reads_back_from_its_string() {
        assert_round_trip!(Tier);
        assert_round_trip!(Dimension);
        assert_round_trip!(EventKind);
        assert_round_trip!(LineType);
        assert_round_trip!(Change);
        assert_round_trip!(RetentionClass);
    }

    /// The strings are stored: changing one orphans every row written before.
    #[test]
    fn the_stored_strings_stay() {
        let tiers: Vec<&str> = Tier::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(tiers, ["h", "d", "m"]);
        assert_eq!(Dimension::All.as_str(), "");
        assert_eq!(Change::Vital.as_str(), "vital");
        assert_eq!(LineType::Vitals.as_str(), "vitals");
        let classes: Vec<&str> = RetentionClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(classes, ["events", "sessions", "conversions", "profiles", "aggregates"]);
    }

    /// An export writes a stored kind as it is: it must read back as the
    /// same event through the import.
    #[test]
    fn a_stored_kind_is_spelled_as_its_line_type() {
        for &k in EventKind::ALL {
            assert_eq!(k.as_str(), k.line_type().as_str());
            assert_eq!(k.as_str(), Change::of(k).as_str());
        }
    }

    /// Every `.rs` file under `dir`, recursively.
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// A quoted kind, line type, change or tier (`"pageview"`, `'d'`) in the
    /// analytics code is a second spelling of it: the code names the enum.
    /// Test code may spell the wire input it sends.
    #[test]
    fn the_words_are_spelled_here_only() {
        let mut words: Vec<&str> = (EventKind::ALL.iter().map(|w| w.as_str()))
            .chain(LineType::ALL.iter().map(|w| w.as_str()))
            .chain(Change::ALL.iter().map(|w| w.as_str()))
            .chain(Tier::ALL.iter().map(|w| w.as_str()))
            .collect();
        words.sort();
        words.dedup();
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        for dir in ["service/analytics", "store/analytics", "demo"] {
            sources(&src.join(dir), &mut files);
        }
        assert!(files.len() > 40, "the walk found the sources");
        let mut found = Vec::new();
        for file in &files {
            let name = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            // The filter dimensions are words of their own (REPORTING §3:
            // `event` is the custom event's name), spelled once in dims.rs.
            if name.ends_with("vocabulary.rs") || name.ends_with("tests.rs") || name.ends_with("filtered/dims.rs") {
                continue;
            }
            let text = std::fs::read_to_string(file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for word in &words {
                if code.contains(&format!("\"{word}\"")) || code.contains(&format!("'{word}'")) {
                    found.push(format!("{word} in {name}"));
                }
            }
        }
        assert!(found.is_empty(), "spelled outside vocabulary.rs: {found:?}");
    }

    #[test]
    fn tiers_order_as_their_stored_text() {
        let mut tiers = Tier::ALL.to_vec();
        tiers.sort();
        assert_eq!(tiers, [Tier::Day, Tier::Hour, Tier::Month]);
        assert!(Tier::Hour.counted() && Tier::Day.counted() && !Tier::Month.counted());
    }
}
