//! The acceptance rules on values: `decide` with a hand-made [`Loaded`], no
//! database (the integration tests in `tests/it/analytics*.rs` run the whole
//! write on SQLite and PostgreSQL).

use super::decide::decide;
use super::*;
use crate::service::analytics::definitions::{Matcher, Step};
use crate::service::analytics::ingest::agent::Agent;
use crate::service::analytics::ingest::batch::{LineOrigin, Vitals};
use crate::store::analytics::{EventRow, SessionRow, VisitorRow};

// rule: TRK-26
#[test]
fn event_time_corrects_skew_and_keeps_order() {
    let now = 1_000_000_000;
    assert_eq!(event_time(now, Some(5_000), Some(4_000), 0), now - 1_000);
    // Older than a day, or from the future: the receive time.
    assert_eq!(event_time(now, Some(100_000_000), Some(1), 0), now);
    assert_eq!(event_time(now, Some(4_000), Some(5_000), 0), now);
    assert_eq!(event_time(now, None, Some(4_000), 0), now);
    // Never before the visitor's previous event, never after receipt.
    assert_eq!(event_time(now, Some(5_000), Some(1_000), now - 500), now - 500);
}

const NOW: i64 = 1_764_590_400_000;
const MIN: i64 = 60_000;

fn visit() -> Visit {
    Visit {
        site_id: "loja".into(),
        domains: vec!["loja.example.com".into()],
        route_patterns: vec!["/p/:id".into()],
        visitor_id: "v1".into(),
        received_at: NOW,
        sent_at: None,
        hash: false,
        redact: false,
        language: Some("pt-BR".into()),
        agent: Agent::default(),
        country: None,
        region: None,
        idle_ms: 30 * MIN,
        max_ms: 24 * 60 * MIN,
        trusted: false,
        click_key: None,
        user_agent: None,
        kept_session: None,
    }
}

/// Ids numbered in the order they are made: `s_1`, `e_2`, …
fn numbered() -> impl FnMut(&str, i64) -> Result<String> {
    let mut n = 0;
    move |prefix: &str, _t: i64| {
        n += 1;
        Ok(format!("{prefix}{n}"))
    }
}

fn url(u: &str) -> url::Url {
    url::Url::parse(u).unwrap()
}

fn pageview(id: &str, page: &str) -> Option<Incoming> {
    Some(Incoming::Pageview {
        ts: None,
        pageview_id: id.into(),
        url: url(page),
        referrer: None,
        properties: None,
        origin: None,
    })
}

fn custom(name: &str, page: &str) -> Option<Incoming> {
    Some(Incoming::Custom { ts: None, url: url(page), name: name.into(), properties: None, origin: None })
}

fn engagement(id: &str, engaged_ms: i64) -> Option<Incoming> {
    Some(Incoming::Engagement { pageview_id: id.into(), engaged_ms })
}

/// A stored session of `v1` that started at `start` and was last seen at `last`.
fn session(id: &str, start: i64, last: i64) -> SessionRow {
    SessionRow::example(id, "v1", start, last)
}

/// A stored pageview of `session_id` at `at`.
fn stored_pageview(pageview_id: &str, session_id: &str, at: i64) -> EventRow {
    EventRow {
        id: format!("e_{pageview_id}"),
        site_id: "loja".into(),
        session_id: session_id.into(),
        visitor_id: "v1".into(),
        kind: "pageview".into(),
        name: None,
        path: "/".into(),
        route: "/".into(),
        occurred_at: at,
        pageview_id: Some(pageview_id.into()),
        properties: None,
        engaged_ms: None,
        lcp: None,
        inp: None,
        cls: None,
        fcp: None,
        ttfb: None,
    }
}

/// A visitor whose current session `s0` was last seen `ago` before now.
fn returning(ago: i64) -> Loaded {
    Loaded {
        visitor: VisitorRow { session_id: "s0".into(), session_started_at: NOW - ago, last_at: NOW - ago, sessions: 1 },
        current: Some(session("s0", NOW - ago, NOW - ago)),
        ..Loaded::default()
    }
}

fn run(loaded: Loaded, events: Vec<Option<Incoming>>) -> Plan {
    decide(&visit(), loaded, events, &mut numbered()).unwrap()
}

fn inserted(plan: &Plan) -> Vec<&SessionRow> {
    plan.sessions
        .iter()
        .filter_map(|s| match s {
            SessionWrite::Insert(row) => Some(row),
            SessionWrite::Update(_) => None,
        })
        .collect()
}

// rule: STORE-01
#[test]
fn a_new_visitors_pageview_opens_a_session() {
    let plan = run(Loaded::default(), vec![pageview("p1", "https://loja.example.com/p/7?utm_source=news")]);
    assert_eq!(
        plan.outcome,
        Outcome { accepted: 1, rejected: 0, session_id: Some("s_1".into()), sessions: 1, ..Outcome::default() }
    );
    let opened = inserted(&plan);
    assert_eq!(opened.len(), 1);
    let s = opened[0];
    assert_eq!((s.id.as_str(), s.entry_route.as_str(), s.source.as_str()), ("s_1", "/p/:id", "news"));
    assert_eq!((s.pageviews, s.is_returning, s.language.as_deref()), (1, false, Some("pt-BR")));
    assert_eq!(plan.events.len(), 1);
    let e = &plan.events[0];
    assert_eq!(
        (e.id.as_str(), e.kind.as_str(), e.path.as_str(), e.route.as_str()),
        ("e_2", "pageview", "/p/7", "/p/:id")
    );
    assert_eq!(plan.outbox.len(), 1);
    let o = &plan.outbox[0];
    assert_eq!((o.kind.as_str(), o.new_session, o.d_bounces, o.pageview_no), ("pageview", 1, 1, 1));
    let VisitorWrite::Update(state) = &plan.visitor else { panic!("the visitor moved: {:?}", plan.visitor) };
    assert_eq!((state.session_id.as_str(), state.last_at, state.sessions), ("s_1", NOW, 1));
    assert_eq!((state.current_path.as_str(), state.current_route.as_str()), ("/p/7", "/p/:id"));
}

// rule: SES-07
#[test]
fn a_pageview_within_the_idle_time_joins_the_current_session() {
    let plan = run(returning(10 * MIN), vec![pageview("p1", "https://loja.example.com/b")]);
    assert_eq!(plan.outcome.sessions, 0);
    assert!(inserted(&plan).is_empty());
    let [SessionWrite::Update(s)] = plan.sessions.as_slice() else { panic!("{:?}", plan.sessions) };
    assert_eq!((s.id.as_str(), s.pageviews, s.last_at, s.exit_path.as_str()), ("s0", 2, NOW, "/b"));
    let o = &plan.outbox[0];
    // The session stops bouncing and lasts from its start to now.
    assert_eq!((o.new_session, o.d_bounces, o.d_duration, o.prev_route.as_deref()), (0, -1, 10 * MIN, Some("/")));
}

// rule: SES-07
#[test]
fn after_the_idle_time_a_returning_session_opens() {
    let plan = run(returning(31 * MIN), vec![pageview("p1", "https://loja.example.com/")]);
    let opened = inserted(&plan);
    assert_eq!(opened.len(), 1);
    assert!(opened[0].is_returning);
    // The old session is not written again.
    assert_eq!(plan.sessions.len(), 1);
    let VisitorWrite::Update(state) = &plan.visitor else { panic!() };
    assert_eq!(state.sessions, 2);
}

// rule: SES-19
#[test]
fn an_alias_going_on_in_a_handed_over_session_stays_marked_until_it_starts_its_own() {
    // Identify gave the alias's open session to the person: the session's
    // visitor is another id than the one the alias's events carry.
    let handed = |ago: i64| {
        let mut loaded = returning(ago);
        if let Some(s) = loaded.current.as_mut() {
            s.visitor_id = "u_person".into();
        }
        loaded
    };
    let plan = run(handed(5 * MIN), vec![pageview("p1", "https://loja.example.com/b")]);
    let VisitorWrite::Update(state) = &plan.visitor else { panic!("{:?}", plan.visitor) };
    assert_eq!((state.session_id.as_str(), state.handed_over), ("s0", true));
    let plan = run(handed(31 * MIN), vec![pageview("p1", "https://loja.example.com/b")]);
    let VisitorWrite::Update(state) = &plan.visitor else { panic!("{:?}", plan.visitor) };
    assert_ne!(state.session_id, "s0");
    assert!(!state.handed_over, "a session of its own");
    let plan = run(returning(5 * MIN), vec![pageview("p1", "https://loja.example.com/b")]);
    let VisitorWrite::Update(state) = &plan.visitor else { panic!("{:?}", plan.visitor) };
    assert!(!state.handed_over, "its own session");
}

// rule: TRK-29
#[test]
fn a_resent_or_foreign_pageview_changes_nothing() {
    let mut loaded = returning(5 * MIN);
    loaded.stored = vec![stored_pageview("p1", "s0", NOW - 5 * MIN)];
    let plan =
        run(loaded, vec![pageview("p1", "https://loja.example.com/"), pageview("p2", "https://evil.example/"), None]);
    assert_eq!(plan.outcome, Outcome { accepted: 0, rejected: 3, session_id: None, sessions: 0, ..Outcome::default() });
    assert!(plan.events.is_empty() && plan.outbox.is_empty() && plan.sessions.is_empty());
    assert_eq!(plan.visitor, VisitorWrite::DropIfEmpty);
}

// rule: TRK-31
#[test]
fn an_engagement_extends_the_session_of_its_pageview_and_the_largest_wins() {
    // The pageview belongs to an earlier session than the current one.
    let mut loaded = returning(5 * MIN);
    loaded.stored = vec![stored_pageview("p0", "s_old", NOW - 3 * 60 * MIN)];
    loaded.sessions.insert("s_old".into(), session("s_old", NOW - 3 * 60 * MIN, NOW - 3 * 60 * MIN));
    let plan = run(loaded, vec![engagement("p0", 40_000), engagement("p0", 30_000)]);
    assert_eq!(plan.outcome.accepted, 2);
    assert_eq!(plan.measured.len(), 1);
    assert_eq!(plan.measured[0].engaged_ms, Some(40_000));
    let [SessionWrite::Update(s)] = plan.sessions.as_slice() else { panic!("{:?}", plan.sessions) };
    assert_eq!((s.id.as_str(), s.end_at), ("s_old", NOW - 3 * 60 * MIN + 40_000));
    // One outbox row: the smaller engagement that followed changed nothing.
    let [o] = plan.outbox.as_slice() else { panic!("{:?}", plan.outbox) };
    assert_eq!((o.kind.as_str(), o.d_engaged_sum, o.d_engaged_count, o.d_duration), ("engagement", 40_000, 1, 40_000));
    // An engagement does not move the visitor.
    assert_eq!(plan.visitor, VisitorWrite::DropIfEmpty);
}

// rule: TRK-30
#[test]
fn vitals_need_their_pageview_stored_or_earlier_in_the_batch() {
    let vitals = |id: &str| {
        Some(Incoming::Vitals { pageview_id: id.into(), vitals: Vitals { lcp: Some(900), ..Vitals::default() } })
    };
    let plan = run(Loaded::default(), vec![vitals("p1"), pageview("p1", "https://loja.example.com/"), vitals("p1")]);
    assert_eq!((plan.outcome.accepted, plan.outcome.rejected), (2, 1));
    assert_eq!(plan.events[0].lcp, Some(900));
    let kinds: Vec<&str> = plan.outbox.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, ["pageview", "vital"]);
    assert_eq!((plan.outbox[1].vital_old, plan.outbox[1].vital_new), (None, Some(900)));
}

// rule: ARPT-10
#[test]
fn a_goal_counts_each_completion_and_its_sessions_first_once() {
    let goals = vec![("g1".to_string(), Matcher::Pageview { path: "/p/:id".into() })];
    let plan = run(
        Loaded { goals: goals.clone(), ..Loaded::default() },
        vec![pageview("p1", "https://loja.example.com/p/1"), pageview("p2", "https://loja.example.com/p/2")],
    );
    let firsts: Vec<bool> = plan.hits.iter().map(|h| h.first_in_session).collect();
    assert_eq!(firsts, [true, false]);
    assert_eq!(plan.hits[1].event_id, plan.events[1].id);
    assert_eq!(plan.outbox[0].goals.as_deref(), Some("g1"));
    assert_eq!(plan.outbox[0].new_goals.as_deref(), Some("g1"));
    assert_eq!(plan.outbox[1].goals.as_deref(), Some("g1"));
    assert_eq!(plan.outbox[1].new_goals, None);

    // The current session completed the goal in an earlier batch.
    let mut loaded = returning(5 * MIN);
    loaded.goals = goals;
    loaded.session_goals.insert(("s0".into(), "g1".into()));
    let plan = run(loaded, vec![pageview("p3", "https://loja.example.com/p/3")]);
    assert_eq!(plan.hits.len(), 1);
    assert!(!plan.hits[0].first_in_session);
    assert_eq!(plan.outbox[0].new_goals, None);
}

// rule: SES-15
#[test]
fn a_landing_ref_tags_the_new_session_with_an_existing_affiliate() {
    let mut loaded = Loaded::default();
    loaded.affiliates.insert("ana".into(), "aff_1".into());
    let plan = run(loaded.clone(), vec![pageview("p1", "https://loja.example.com/?ref=Ana")]);
    assert_eq!(inserted(&plan)[0].affiliate_id.as_deref(), Some("aff_1"));
    // An unknown slug tags nothing; a later event of the session changes nothing.
    let plan = run(
        loaded,
        vec![pageview("p1", "https://loja.example.com/?ref=bob"), custom("buy", "https://loja.example.com/?ref=ana")],
    );
    assert_eq!(inserted(&plan)[0].affiliate_id, None);
}

#[test]
fn the_batchs_events_index_the_funnels_steps() {
    let steps = vec![
        Step { label: "product".into(), matcher: Matcher::Pageview { path: "/p/:id".into() } },
        Step { label: "buy".into(), matcher: Matcher::Event { name: "buy".into() } },
    ];
    let loaded = Loaded { funnels: vec![("f1".into(), steps)], ..Loaded::default() };
    let plan = run(
        loaded,
        vec![
            pageview("p1", "https://loja.example.com/p/1"),
            pageview("p2", "https://loja.example.com/about"),
            custom("buy", "https://loja.example.com/p/1"),
        ],
    );
    let rows: Vec<(&str, i64)> = plan.funnel_steps.iter().map(|r| (r.event_id.as_str(), r.steps)).collect();
    assert_eq!(rows, [(plan.events[0].id.as_str(), 1), (plan.events[2].id.as_str(), 2)]);
}

// rule: IMP-06
#[test]
fn an_imported_line_older_than_the_visitors_latest_is_refused() {
    let v = Visit { trusted: true, ..visit() };
    let mut loaded = returning(5 * MIN);
    loaded.visitor.last_at = NOW;
    let line = Some(Incoming::Pageview {
        ts: Some(NOW - 1),
        pageview_id: "p1".into(),
        url: url("https://loja.example.com/"),
        referrer: None,
        properties: None,
        origin: Some(Box::new(LineOrigin { line: 7, ..LineOrigin::default() })),
    });
    let err = decide(&v, loaded, vec![line], &mut numbered()).unwrap_err();
    assert!(err.message.contains("line 7"), "{err:?}");
}

// rule: WA-33
#[test]
fn only_a_new_session_landing_with_fbclid_keeps_it_and_only_with_a_key() {
    let key = crate::crypto::SecretsKey::from_base64(&crate::secret::Secret::new(crate::ids::secrets_key().unwrap()))
        .unwrap();
    let v = Visit { click_key: Some(key), ..visit() };
    // A landing with fbclid opens a session: its fbclid is kept, with the session's start.
    let plan = decide(
        &v,
        Loaded::default(),
        vec![
            pageview("p1", "https://loja.example.com/p/1?utm_source=fb&fbclid=IwAR2x_Yz"),
            pageview("p2", "https://loja.example.com/p/2?fbclid=later"),
        ],
        &mut numbered(),
    )
    .unwrap();
    let kept: Vec<(&str, &str, i64)> =
        plan.click_ids.iter().map(|c| (c.session_id.as_str(), c.fbclid.expose(), c.landed_at)).collect();
    let started = inserted(&plan)[0].started_at;
    assert_eq!(kept, [(inserted(&plan)[0].id.as_str(), "IwAR2x_Yz", started)], "the joining pageview's is not");
    assert!(!format!("{plan:?}").contains("IwAR2x_Yz"), "never printed");
    // Joining an open session, landing without one, or without a key: nothing.
    let joined =
        decide(&v, returning(MIN), vec![pageview("p3", "https://loja.example.com/?fbclid=x")], &mut numbered());
    assert!(joined.unwrap().click_ids.is_empty());
    let plain = decide(&v, Loaded::default(), vec![pageview("p4", "https://loja.example.com/")], &mut numbered());
    assert!(plain.unwrap().click_ids.is_empty());
    assert!(run(Loaded::default(), vec![pageview("p5", "https://loja.example.com/?fbclid=x")]).click_ids.is_empty());
}

// rule: WA-02
#[test]
fn a_whatsapp_tap_binds_its_reference_to_the_click_and_a_bad_one_is_dropped() {
    let tap = |name: &str, page: &str, props: serde_json::Value| {
        let properties = props.as_object().cloned();
        Some(Incoming::Custom { ts: None, url: url(page), name: name.into(), properties, origin: None })
    };
    let plan = run(
        returning(MIN),
        vec![
            tap(
                "whatsapp_click",
                "https://loja.example.com/p/7?x=1",
                serde_json::json!({"number": "5511999990000", "ref": "r7k2qx"}),
            ),
            tap(
                "whatsapp_click",
                "https://loja.example.com/",
                serde_json::json!({"number": "5511999990000", "ref": "R7K2Q0"}),
            ),
            // Another event's `ref` is its own business.
            tap("share", "https://loja.example.com/", serde_json::json!({"ref": "R7K2QX"})),
        ],
    );
    assert_eq!(plan.outcome.accepted, 3, "every event is kept");
    let bound = plan.whatsapp_refs.iter().map(|r| {
        (
            r.site_id.as_str(),
            r.reference.as_str(),
            r.visitor_id.as_str(),
            r.session_id.as_str(),
            r.number.as_str(),
            r.path.as_str(),
            r.clicked_at,
        )
    });
    assert_eq!(bound.collect::<Vec<_>>(), [("loja", "R7K2QX", "v1", "s0", "5511999990000", "/p/7", NOW)]);
    let props: Vec<Option<&str>> = plan.events.iter().map(|e| e.properties.as_deref()).collect();
    assert_eq!(
        props,
        [
            Some(r#"{"number":"5511999990000","ref":"R7K2QX"}"#),
            Some(r#"{"number":"5511999990000"}"#),
            Some(r#"{"ref":"R7K2QX"}"#)
        ]
    );
}
