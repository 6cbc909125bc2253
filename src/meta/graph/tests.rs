use super::*;

fn client() -> GraphClient {
    GraphClient::new("http://127.0.0.1:9/", Duration::from_secs(1))
}

#[test]
fn urls_pin_the_version() {
    let c = client();
    let u = c.url("me", "me", &[("fields", "id,name")]).unwrap();
    assert_eq!(u.as_str(), "http://127.0.0.1:9/v25.0/me?fields=id%2Cname");
    let with_path = GraphClient::new("https://proxy.test/graph", Duration::from_secs(1));
    assert_eq!(with_path.url("me", "me", &[]).unwrap().as_str(), "https://proxy.test/graph/v25.0/me");
    let bad = GraphClient::new("not a url", Duration::from_secs(1));
    assert_eq!(bad.url("me", "me", &[]).unwrap_err().class, ErrorClass::Invalid);
}

#[test]
fn ids_that_could_change_the_call_are_refused() {
    for ok in ["act_1029384756", "111222333444", "me"] {
        assert!(check_id("x", ok).is_ok(), "{ok}");
    }
    for bad in ["", "act_1/../me", "1?access_token=x", "1#", "a b", "act_1%2F"] {
        assert!(check_id("x", bad).is_err(), "{bad}");
    }
}

#[test]
fn next_page_strips_tokens_and_stays_on_graph() {
    let c = client();
    let current = c.url("p", "me/adaccounts", &[("limit", "100")]).unwrap();
    let paging = serde_json::json!({
        "cursors": {"after": "C2"},
        "next": "http://127.0.0.1:9/v25.0/me/adaccounts?access_token=EAAsecret&limit=100&after=C2"
    });
    let next = c.next_page(&current, Some(&paging)).unwrap();
    assert_eq!(next.as_str(), "http://127.0.0.1:9/v25.0/me/adaccounts?limit=100&after=C2");
    // Another origin: never followed; the cursor is used on our own URL instead.
    let elsewhere = serde_json::json!({
        "cursors": {"after": "C3"},
        "next": "https://evil.test/v25.0/me/adaccounts?after=C3"
    });
    let next = c.next_page(&next, Some(&elsewhere)).unwrap();
    assert_eq!(next.as_str(), "http://127.0.0.1:9/v25.0/me/adaccounts?limit=100&after=C3");
    // No `next`: the last page, even with cursors.
    assert!(c.next_page(&current, Some(&serde_json::json!({"cursors": {"after": "C9"}}))).is_none());
    assert!(c.next_page(&current, None).is_none());
}

#[test]
fn thumbnail_urls() {
    let ok = |s: &str| allowed_external_url(&Url::parse(s).unwrap());
    assert!(ok("https://scontent.xx.fbcdn.net/v/t45/x.png?stp=1"));
    assert!(ok("http://127.0.0.1:4000/thumb/1.png"));
    assert!(ok("http://localhost:4000/thumb/1.png"));
    assert!(ok("http://[::1]:4000/thumb/1.png"));
    assert!(!ok("http://169.254.169.254/latest/meta-data"));
    assert!(!ok("file:///etc/passwd"));
    assert!(!ok("ftp://x.test/a.png"));
}

#[test]
fn debug_prints_no_secret() {
    let c = client();
    assert!(format!("{c:?}").contains("v25.0"));
}

/// Every class of error, built the ways the client builds them, with a canary token in
/// everything Meta could echo: none of it reaches Display or Debug.
#[test]
fn canary_never_reaches_an_error() {
    let canary = "EAAGcanaryTOKEN0123456789";
    let mut errors = Vec::new();
    for (code, sub, status) in [
        (Some(190), Some(463), 400),
        (Some(10), None, 403),
        (Some(4), None, 400),
        (Some(2), None, 503),
        (Some(1), Some(TOO_MUCH_DATA_SUBCODE), 500),
        (Some(100), None, 400),
        (Some(101), None, 400),
        (None, None, 502),
    ] {
        let body = serde_json::json!({"error": {
            "message": format!("bad {canary}"), "code": code, "error_subcode": sub,
            "error_user_msg": canary, "fbtrace_id": canary, "error_data": {"token": canary}
        }})
        .to_string();
        let parsed = GraphErrorBody::parse(body.as_bytes());
        for endpoint in [Endpoint::Api, Endpoint::Exchange, Endpoint::DebugToken] {
            errors.push(GraphError::from_answer("me", endpoint, status, parsed.as_ref(), Usage::default()));
        }
    }
    let classes: std::collections::HashSet<_> = errors.iter().map(|e| e.class).collect();
    assert_eq!(classes.len(), 7, "every class: {classes:?}");
    for e in &errors {
        assert!(!format!("{e}").contains(canary), "{e}");
        assert!(!format!("{e:?}").contains(canary), "{e:?}");
    }
}
