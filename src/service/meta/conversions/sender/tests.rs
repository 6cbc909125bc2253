use super::*;
use crate::clock::DAY_MS;
use crate::store::meta::conversions::ConversionStatus;
use sha2::{Digest, Sha256};

#[test]
fn event_ids_are_the_contracts_digest() {
    // sha256("ld_1:Purchase")
    let id = event_id("ld_1", "Purchase");
    assert_eq!(id.len(), 64);
    assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_ne!(id, event_id("ld_1", "Lead"));
    let br: String = Sha256::digest(b"br").iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(br, COUNTRY_BR_SHA256);
}

#[test]
fn purchase_values_are_major_units() {
    let row = store::ConversionRow {
        event_id: "e".into(),
        site_id: "s".into(),
        lead_id: Some("l".into()),
        event_name: PURCHASE.into(),
        event_time: 1_796_040_000_123,
        value_cents: Some(45_990),
        currency: Some("BRL".into()),
        status: ConversionStatus::Pending.to_string(),
        attempts: 1,
        due_at: Some(0),
        lease_owner: None,
        lease_until: None,
        ph: Some("a,b".into()),
        external_id: None,
        last_error: None,
        created_at: 0,
        sent_at: None,
        updated_at: 0,
        meta_lead_id: None,
        crm_event_name: None,
        web_conversion_id: None,
        web_session_id: None,
        sent_event_id: None,
    };
    let ev = serde_json::to_value(server_event(&row, None)).unwrap();
    assert_eq!(ev["custom_data"]["value"], serde_json::json!(459.9));
    assert_eq!(ev["custom_data"]["currency"], "BRL");
    assert_eq!(ev["event_time"], 1_796_040_000);
    assert_eq!(ev["user_data"]["ph"], serde_json::json!(["a", "b"]));
    assert_eq!(ev["user_data"]["country"], serde_json::json!([COUNTRY_BR_SHA256]));
    assert!(ev["user_data"].get("external_id").is_none());
    assert_eq!(ev["action_source"], "chat");
}

// rule: LA-19
#[test]
fn a_form_leads_event_is_a_conversion_leads_event() {
    let row = store::ConversionRow {
        event_id: "e".into(),
        site_id: "s".into(),
        lead_id: Some("l".into()),
        event_name: QUALIFIED_LEAD.into(),
        event_time: 1_796_040_000_123,
        value_cents: None,
        currency: None,
        status: ConversionStatus::Pending.to_string(),
        attempts: 1,
        due_at: Some(0),
        lease_owner: None,
        lease_until: None,
        ph: None,
        external_id: None,
        last_error: None,
        created_at: 0,
        sent_at: None,
        updated_at: 0,
        meta_lead_id: Some("700100200300".into()),
        crm_event_name: Some("Orçamento pedido".into()),
        web_conversion_id: None,
        web_session_id: None,
        sent_event_id: None,
    };
    let ev = serde_json::to_value(server_event(&row, None)).unwrap();
    assert_eq!(ev["action_source"], "system_generated");
    assert_eq!(ev["event_name"], "Orçamento pedido");
    assert_eq!(ev["user_data"]["lead_id"], "700100200300", "Meta's lead id, not hashed");
    assert!(ev["user_data"].get("ph").is_none());
    assert_eq!(ev["custom_data"], serde_json::json!({"event_source": "crm", "lead_event_source": "rastrod"}));
}

fn lead_row(event_name: &str, value_cents: Option<i64>) -> store::ConversionRow {
    store::ConversionRow {
        event_id: event_id("ld_1", event_name),
        site_id: "s".into(),
        lead_id: Some("ld_1".into()),
        event_name: event_name.into(),
        event_time: 1_796_040_000_123,
        value_cents,
        currency: value_cents.map(|_| "BRL".into()),
        status: ConversionStatus::Pending.to_string(),
        attempts: 1,
        due_at: Some(0),
        lease_owner: None,
        lease_until: None,
        ph: Some("a".repeat(64)),
        external_id: Some("b".repeat(64)),
        last_error: None,
        created_at: 0,
        sent_at: None,
        updated_at: 0,
        meta_lead_id: None,
        crm_event_name: None,
        web_conversion_id: None,
        web_session_id: None,
        sent_event_id: None,
    }
}

// rule: WA-31
#[test]
fn a_click_to_whatsapp_leads_event_goes_by_its_click_id() {
    let by_click =
        || Shape::ClickId { ctwa_clid: Secret::new("ARAkLkA8rmlYlWclid"), account: "104996632576012".into() };
    for (board, sent) in [(LEAD, "LeadSubmitted"), (QUALIFIED_LEAD, "QualifiedLead"), (PURCHASE, "Purchase")] {
        let value = (board == PURCHASE).then_some(45_990);
        let row = lead_row(board, value);
        let ev = serde_json::to_value(server_event(&row, Some(&by_click()))).unwrap();
        assert_eq!(ev["event_name"], sent, "{board}");
        assert_eq!(ev["action_source"], "business_messaging");
        assert_eq!(ev["messaging_channel"], "whatsapp");
        assert_eq!(ev["event_id"], row.event_id.as_str(), "the same id as the chat path: Meta deduplicates");
        assert_eq!(ev["event_time"], 1_796_040_000);
        // Unhashed, and nothing else about the person (not documented on this channel).
        assert_eq!(
            ev["user_data"],
            serde_json::json!({"ctwa_clid": "ARAkLkA8rmlYlWclid", "whatsapp_business_account_id": "104996632576012"})
        );
        match value {
            Some(_) => assert_eq!(ev["custom_data"], serde_json::json!({"value": 459.9, "currency": "BRL"})),
            None => assert!(ev.get("custom_data").is_none()),
        }
        assert!(!format!("{:?}", server_event(&row, Some(&by_click()))).contains("ARAkLkA8rmlYlWclid"));
    }
    // Meta refuses Schedule on business_messaging: it keeps the chat path.
    assert_eq!(business_messaging_name(SCHEDULE), None);
    assert_eq!(business_messaging_name("Contact"), None);
}

// rule: WA-32
#[test]
fn without_a_click_id_the_chat_path_is_unchanged() {
    let ev = serde_json::to_value(server_event(&lead_row(LEAD, None), None)).unwrap();
    assert_eq!(ev["action_source"], "chat");
    assert_eq!(ev["event_name"], "Lead");
    assert!(ev.get("messaging_channel").is_none());
    assert_eq!(
        ev["user_data"],
        serde_json::json!({"ph": ["a".repeat(64)], "external_id": ["b".repeat(64)], "country": [COUNTRY_BR_SHA256]})
    );
}

// rule: WA-33
#[test]
fn a_site_sale_goes_as_a_website_purchase_with_fbc() {
    let p = WebPurchase {
        site_id: "s",
        conversion_id: "cv_1",
        session_id: "s_1",
        at: 1_796_040_000_123,
        value_cents: 12_345,
        currency: "BRL",
        event_id: None,
    };
    assert_eq!(web_sent_event_id(&p), "conv:cv_1");
    assert_eq!(web_sent_event_id(&WebPurchase { event_id: Some("order-77"), ..p }), "order-77");
    let own = web_event_id("cv_1");
    assert!(own.len() == 64 && own != event_id("cv_1", PURCHASE), "the row's own id, apart from any lead's");
    assert_eq!(fbc_of(1_796_040_000_000, "IwAR2x"), "fb.1.1796040000000.IwAR2x");
    let row = store::ConversionRow {
        event_id: own,
        lead_id: None,
        ph: None,
        external_id: None,
        web_conversion_id: Some("cv_1".into()),
        web_session_id: Some("s_1".into()),
        sent_event_id: Some("order-77".into()),
        ..lead_row(PURCHASE, Some(12_345))
    };
    let shape = Shape::Website {
        fbc: Secret::new(fbc_of(1_796_040_000_000, "IwAR2x")),
        user_agent: Some(Secret::new("Mozilla/5.0 (Android 14) Chrome/131")),
        source_url: Some("https://loja.example.com/p/1".into()),
    };
    let ev = serde_json::to_value(server_event(&row, Some(&shape))).unwrap();
    assert_eq!(
        ev,
        serde_json::json!({"event_name": "Purchase", "event_time": 1_796_040_000, "event_id": "order-77",
            "action_source": "website", "event_source_url": "https://loja.example.com/p/1",
            "user_data": {"fbc": "fb.1.1796040000000.IwAR2x", "client_user_agent": "Mozilla/5.0 (Android 14) Chrome/131"},
            "custom_data": {"value": 123.45, "currency": "BRL"}})
    );
}

#[test]
fn retry_steps_follow_the_settings() {
    let s = SendSettings { batch_max: 10, lease_ms: 900_000, max_age_ms: 7 * DAY_MS, steps_ms: vec![60_000, 600_000] };
    assert_eq!(s.max_attempts(), 3);
}

fn temp_db(name: &str) -> (crate::db::Db, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("rastrod-capi-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let url = format!("sqlite://{}", dir.join("t.db").display());
    (crate::db::Db::open(&url, 2, 64, 1000).unwrap(), dir)
}

fn seed(conn: &mut AnyConnection) -> Result<ConnectionRow> {
    crate::store::leads::sites::insert(
        conn,
        &crate::store::leads::sites::SiteRow {
            id: "s1".into(),
            name: "S".into(),
            currency: "BRL".into(),
            timezone: "UTC".into(),
            owner_id: "o".into(),
            domains: "[]".into(),
            route_patterns: "[]".into(),
            cookieless: false,
            send_lead_event: false,
            created_at: 0,
            updated_at: 0,
        },
    )?;
    let connection = ConnectionRow {
        owner_key: "agency".into(),
        sealed_token: "v1:x:y".into(),
        token_version: 2,
        source: "token".into(),
        authorized_by_id: None,
        authorized_by_name: None,
        authorized_at: 0,
        expires_at: None,
        expiring_soon: false,
        invalid_since: None,
        last_error: None,
        created_at: 0,
        updated_at: 0,
    };
    meta_store::put_connection(conn, &connection)?;
    meta_store::put_pixel(
        conn,
        &meta_store::PixelRow {
            site_id: "s1".into(),
            pixel_id: "1".into(),
            name: None,
            source: PixelSource::Connection,
            owner_key: Some("agency".into()),
            sealed_token: None,
            token_version: 1,
            enabled: true,
            test_event_code: None,
            stopped_reason: None,
            last_error: None,
            created_at: 0,
            updated_at: 0,
        },
    )?;
    store::insert(
        conn,
        &store::ConversionRow {
            event_id: "e1".into(),
            site_id: "s1".into(),
            lead_id: None,
            event_name: LEAD.into(),
            event_time: 0,
            value_cents: None,
            currency: None,
            status: ConversionStatus::Pending.to_string(),
            attempts: 0,
            due_at: Some(0),
            lease_owner: None,
            lease_until: None,
            ph: Some("a".repeat(64)),
            external_id: None,
            last_error: None,
            created_at: 0,
            updated_at: 0,
            sent_at: None,
            meta_lead_id: None,
            crm_event_name: None,
            web_conversion_id: None,
            web_session_id: None,
            sent_event_id: None,
        },
    )?;
    store::take_lease(conn, &["e1".to_string()], "run", 1000, 0)?;
    Ok(connection)
}

fn lead_input(key: &str, meta: Option<serde_json::Value>) -> crate::service::leads::RecordLead {
    crate::service::leads::RecordLead {
        meta,
        ..crate::service::leads::RecordLead::new(key, format!("{key}-new"), 1_000, "whatsapp")
    }
}

/// Records what the writes' effects ask the actors to do.
#[derive(Default)]
struct Recorded(std::sync::Mutex<Vec<crate::service::effects::Effects>>);

impl crate::service::effects::Dispatch for Recorded {
    fn dispatch(&self, effects: &crate::service::effects::Effects) {
        self.0.lock().unwrap().push(effects.clone());
    }
}

/// meta.status's cached answers outlive lead writes that queue nothing (the
/// hot path), and are let go by one that queues a conversion, and by any
/// other write; only the write that queued wakes the pixel's sender. A
/// service context alone runs this: no actors, no HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_writes_that_may_change_meta_status_invalidate_its_cache() {
    use crate::service::leads::{self, SetLeadStage, Stage};
    let (db, dir) = temp_db("cache");
    let config = std::sync::Arc::new(Config::load_from(None, &Default::default()).unwrap());
    let recorded = std::sync::Arc::new(Recorded::default());
    let cx = Context::new(db.clone(), crate::clock::ManualClock::new(1_000), config, "http://127.0.0.1:9")
        .unwrap()
        .with_dispatch(recorded.clone());
    db.write(seed).await.unwrap();
    let ph = serde_json::json!({"ph": ["a".repeat(64)]});
    let g0 = db.generation();
    cx.write(|c| leads::record(c, 2_000, "s1", lead_input("k1", None))).await.unwrap();
    // The site does not send Lead events: hashes alone queue nothing.
    let with_hashes = lead_input("k2", Some(ph.clone()));
    cx.write(move |c| leads::record(c, 2_000, "s1", with_hashes)).await.unwrap();
    assert_eq!(db.generation(), g0, "lead writes that queued nothing keep the cache");
    assert!(recorded.0.lock().unwrap().iter().all(|e| e.conversions_queued.is_empty()));

    let sale = SetLeadStage {
        stage: Some(Stage::Won),
        column: None,
        revenue_cents: Some(10_000),
        event_id: "k2-won".into(),
        occurred_at: 3_000,
        meta: Some(ph),
    };
    cx.write(move |c| leads::set_stage(c, 3_000, "s1", "k2", sale)).await.unwrap();
    let g1 = db.generation();
    assert!(g1 > g0, "a queued Purchase lets the cache go");
    let last = recorded.0.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.conversions_queued.into_iter().collect::<Vec<_>>(), vec!["s1".to_string()], "the sender wakes");
    let pending = db.run(|c| Ok(store::status_counts(c, &["s1".to_string()])?)).await.unwrap();
    assert!(pending.iter().any(|p| p.status == ConversionStatus::Pending.as_str() && p.n == 2), "{pending:?}");

    cx.write_plain(|_| Ok(())).await.unwrap();
    assert!(db.generation() > g1, "any other write lets it go too");
    db.close();
    let _ = std::fs::remove_dir_all(dir);
}

// rule: CAPI-09
/// A refusal of a token that is no longer the stored one (a new one was
/// pasted while the send was in flight) stops nothing, and the event goes
/// again at once with its attempt given back; a refusal of the stored token
/// fails it and marks the connection invalid, stopping its pixel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_stops_only_the_token_still_stored() {
    let (db, dir) = temp_db("refused");
    let stored = db.write(seed).await.unwrap();
    let mut old = stored.clone();
    old.token_version = 1;
    let ids = vec!["e1".to_string()];
    let (ids2, old2) = (ids.clone(), TokenSource::Connection(Box::new(old)));
    let r = db.write(move |c| record_refused(c, "s1", &ids2, "run", &old2, 5)).await.unwrap();
    assert_eq!(r, Round::default());
    let (row, conn) =
        db.run(|c| Ok((store::find(c, "e1")?.unwrap(), meta_store::connection(c, "agency")?.unwrap()))).await.unwrap();
    assert_eq!((row.status.as_str(), row.attempts, row.due_at, row.lease_owner), ("pending", 0, Some(5), None));
    assert!(conn.invalid_since.is_none(), "a token pasted meanwhile keeps sending");

    db.write(|c| Ok(store::take_lease(c, &["e1".to_string()], "run2", 2000, 5)?)).await.unwrap();
    let current = TokenSource::Connection(Box::new(stored));
    let r = db.write(move |c| record_refused(c, "s1", &ids, "run2", &current, 6)).await.unwrap();
    assert_eq!(r.failed, 1);
    let (row, conn, pixel) = db
        .run(|c| {
            Ok((
                store::find(c, "e1")?.unwrap(),
                meta_store::connection(c, "agency")?.unwrap(),
                meta_store::pixel(c, "s1")?.unwrap(),
            ))
        })
        .await
        .unwrap();
    assert_eq!(row.status, ConversionStatus::Failed.as_str());
    assert_eq!(Fault::of(&row.last_error.unwrap()), Some(Fault::MetaTokenInvalid));
    assert!(row.ph.is_none());
    assert_eq!(conn.invalid_since, Some(6));
    assert_eq!(pixel.stopped_reason.as_deref(), Some(Fault::MetaTokenInvalid.as_str()));
    db.close();
    let _ = std::fs::remove_dir_all(dir);
}
