//! The web-analytics dimensions of `filters` and `breakdown` (REPORTING §3,
//! rules REP-06, REP-07, REP-09): what each one reads of a session or an
//! event, spelled once.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::closed_set;
use crate::error::{Error, Result};
use crate::service::analytics::definitions::Matcher;
use crate::service::analytics::vocabulary::EventKind;
use crate::service::reporting::filters::{self, Filter, Op};
use crate::service::sites::routes;
use crate::store::analytics::{EventRow, SessionRow};

closed_set! {
    /// A dimension of the session: its value is the session's, the same for all its events.
    pub enum SessionDim {
        Source = "source",
        Referrer = "referrer",
        Medium = "medium",
        Campaign = "campaign",
        Term = "term",
        Content = "content",
        EntryPage = "entryPage",
        ExitPage = "exitPage",
        Country = "country",
        Region = "region",
        Device = "device",
        Browser = "browser",
        Os = "os",
        Affiliate = "affiliate",
        Identified = "identified",
        Returning = "returning",
    }
}

closed_set! {
    /// A dimension of one event.
    pub enum EventDim {
        /// A pageview's route.
        Page = "page",
        /// A custom event's name.
        Event = "event",
        /// The key of a goal the event completes.
        Goal = "goal",
    }
}

/// The prefix of a custom property's dimension (`prop:plan`).
pub const PROP: &str = "prop:";
const MAX_PROP_KEY: usize = 64;

/// A dimension, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    Session(SessionDim),
    Event(EventDim),
    /// A custom property's value, by its key.
    Prop(String),
}

impl Dim {
    /// The dimension `text` names; an unknown one is refused naming `field`
    /// (never echoing the text).
    pub fn parse(field: &str, text: &str) -> Result<Dim> {
        if let Some(key) = text.strip_prefix(PROP) {
            if key.is_empty() || key.chars().count() > MAX_PROP_KEY || key.chars().any(char::is_control) {
                return Err(Error::invalid(format!("{field}: a property key is 1-{MAX_PROP_KEY} characters")));
            }
            return Ok(Dim::Prop(key.to_string()));
        }
        SessionDim::parse(text).map(Dim::Session).or_else(|| EventDim::parse(text).map(Dim::Event)).ok_or_else(|| {
            Error::invalid(format!(
                "{field}: an unknown dimension (the session's: {}; the event's: {}, or {PROP}<key>)",
                SessionDim::ALL.iter().map(|d| d.as_str()).collect::<Vec<_>>().join(", "),
                EventDim::ALL.iter().map(|d| d.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// Whether the dimension is an event's, which can apply to `kind`.
    fn applies_to(&self, kind: EventKind) -> bool {
        match self {
            Dim::Session(_) => false,
            Dim::Event(EventDim::Page) => kind == EventKind::Pageview,
            Dim::Event(EventDim::Event) => kind == EventKind::Event,
            Dim::Event(EventDim::Goal) | Dim::Prop(_) => true,
        }
    }
}

/// A checked filter.
#[derive(Debug, Clone)]
pub struct Rule {
    pub dim: Dim,
    pub filter: Filter,
}

/// Checks `filters` (REPORTING §3) as the web-analytics dimensions.
pub fn rules(list: &[Filter]) -> Result<Vec<Rule>> {
    let dims: Vec<Dim> = list.iter().map(|f| Dim::parse("filters", &f.dim)).collect::<Result<_>>()?;
    let names: Vec<&str> = list.iter().map(|f| f.dim.as_str()).collect();
    filters::check(list, &names)?;
    Ok(dims.into_iter().zip(list.iter().cloned()).map(|(dim, filter)| Rule { dim, filter }).collect())
}

/// A goal as the `goal` dimension reads it.
pub struct GoalDef {
    pub id: String,
    pub key: String,
    pub name: String,
    pub matcher: Matcher,
}

/// What the filters and breakdowns read beside the rows: each site's route
/// patterns (the exit page's route), its goals' matchers, who is identified.
#[derive(Default)]
pub struct Context {
    pub patterns: HashMap<String, Vec<String>>,
    /// Per site, its goals.
    pub goals: HashMap<String, Vec<GoalDef>>,
    /// (site, visitor) of the identified: a person's id or one of its aliases.
    pub identified: HashSet<(String, String)>,
}

impl Context {
    /// The value of a session dimension (`None`: unknown).
    pub fn session_value(&self, d: SessionDim, s: &SessionRow) -> Option<String> {
        let yes_no = |b: bool| Some(if b { "true" } else { "false" }.to_string());
        match d {
            SessionDim::Source => Some(s.source.clone()),
            SessionDim::Referrer => s.referrer.clone(),
            SessionDim::Medium => Some(s.medium.clone()),
            SessionDim::Campaign => s.campaign.clone(),
            SessionDim::Term => s.term.clone(),
            SessionDim::Content => s.content.clone(),
            SessionDim::EntryPage => Some(s.entry_route.clone()),
            SessionDim::ExitPage => {
                let patterns = self.patterns.get(&s.site_id).map(Vec::as_slice).unwrap_or(&[]);
                Some(routes::route_of(&s.exit_path, patterns))
            }
            SessionDim::Country => s.country.clone(),
            SessionDim::Region => s.region.clone(),
            SessionDim::Device => s.device.clone(),
            SessionDim::Browser => s.browser.clone(),
            SessionDim::Os => s.os.clone(),
            SessionDim::Affiliate => s.affiliate_id.clone(),
            SessionDim::Identified => yes_no(self.identified.contains(&(s.site_id.clone(), s.visitor_id.clone()))),
            SessionDim::Returning => yes_no(s.is_returning),
        }
    }

    /// The values of an event dimension for one event: none when it does
    /// not apply to the event's kind; several for the goals it completes.
    pub fn event_values(&self, d: &Dim, e: &EventRow) -> Vec<Option<String>> {
        let Some(kind) = EventKind::parse(&e.kind) else { return Vec::new() };
        if !d.applies_to(kind) {
            return Vec::new();
        }
        match d {
            Dim::Event(EventDim::Page) => vec![Some(e.route.clone())],
            Dim::Event(EventDim::Event) => vec![e.name.clone()],
            Dim::Event(EventDim::Goal) => self
                .goals
                .get(&e.site_id)
                .into_iter()
                .flatten()
                .filter(|g| g.matcher.matches(kind, &e.path, e.name.as_deref()))
                .map(|g| Some(g.key.clone()))
                .collect(),
            Dim::Prop(key) => {
                let props: Option<Value> = e.properties.as_deref().and_then(|p| serde_json::from_str(p).ok());
                let value = props.as_ref().and_then(|p| p.get(key)).and_then(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Null => None,
                    other => Some(other.to_string()),
                });
                vec![value]
            }
            Dim::Session(_) => Vec::new(),
        }
    }

    /// Whether a session passes every session rule.
    pub fn session_passes(&self, rules: &[Rule], s: &SessionRow) -> bool {
        rules.iter().all(|r| match r.dim {
            Dim::Session(d) => filters::matches(&r.filter, self.session_value(d, s).as_deref()),
            _ => true,
        })
    }

    /// Whether an event passes `rule`: `None` when the rule does not apply
    /// to its kind. A goal rule holds for `is` when a goal it completes is
    /// one of the values, for `isNot` when none is.
    pub fn event_passes(&self, rule: &Rule, e: &EventRow) -> Option<bool> {
        let Some(kind) = EventKind::parse(&e.kind) else { return Some(false) };
        if !rule.dim.applies_to(kind) {
            return None;
        }
        let values = self.event_values(&rule.dim, e);
        let positive = Filter {
            op: match rule.filter.op {
                Op::Is | Op::IsNot => Op::Is,
                Op::Contains | Op::NotContains => Op::Contains,
            },
            ..rule.filter.clone()
        };
        let any = if values.is_empty() {
            filters::matches(&positive, None)
        } else {
            values.iter().any(|v| filters::matches(&positive, v.as_deref()))
        };
        Some(any != rule.filter.op.negated())
    }
}
