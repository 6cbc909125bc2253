//! The dashboard's sign-in limit cannot be turned against the operators:
//! behind a trusted proxy it counts the client's address, not the proxy's,
//! and guesses at a name from unknown addresses slow sign-ins from unknown
//! addresses down without refusing the operator's own (OWASP's guidance on
//! credential stuffing). Time moves on the daemon's manual clock only.

use serde_json::{Value, json};

use crate::backend_test;
use crate::common::{Answer, Backend, TestApp, TestAppBuilder, plain_builder};
use crate::dashboard::{PASSWORD, operator};
use rastrod::service::operators;

/// The daemon behind a reverse proxy on loopback (where the tests connect from).
fn behind_a_proxy(backend: Backend) -> TestAppBuilder {
    plain_builder(backend).env("RASTRO_TRUSTED_PROXIES", "127.0.0.1")
}

/// A sign-in from `client` as the proxy reports it in `X-Forwarded-For`.
async fn sign_in_from(app: &TestApp, client: &str, name: &str, password: &str) -> Answer {
    let res = app
        .http
        .post(format!("{}/dashboard/api/signin", app.base))
        .header("x-forwarded-for", client)
        .json(&json!({"name": name, "password": password}))
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    Answer { status, body: serde_json::from_str(&text).unwrap_or(Value::Null), text }
}

const WRONG: &str = "senha-errada-123";

backend_test!(guesses_from_other_clients_behind_the_proxy_lock_no_one_else_out, behind_a_proxy, |app| {
    operator(&app, "ana", true, "agency:1").await;
    // Twenty wrong passwords from one client, over many names (no name is slowed).
    for i in 0..operators::MAX_FAILURES_PER_CLIENT {
        sign_in_from(&app, "198.51.100.7", &format!("nome{i}"), WRONG).await.err(401, "UNAUTHENTICATED");
    }
    // That client is now refused, whatever it tries...
    sign_in_from(&app, "198.51.100.7", "ana", PASSWORD).await.err(429, "RATE_LIMITED");
    // ...while the proxy's other clients are not: ana, signing in for the
    // first time from her own address, gets in.
    let ok = sign_in_from(&app, "203.0.113.5", "ana", PASSWORD).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    // Every request's peer is the proxy: the header's rightmost hop outside
    // the trusted list is the client counted, whatever a client wrote before it.
    let chained = sign_in_from(&app, "198.51.100.7, 203.0.113.6", "ana", PASSWORD).await;
    assert_eq!(chained.status, 200, "{}", chained.text);
    sign_in_from(&app, "203.0.113.6, 198.51.100.7", "ana", PASSWORD).await.err(429, "RATE_LIMITED");
});

backend_test!(guesses_at_a_name_slow_unknown_clients_but_never_the_operators_own, behind_a_proxy, |app| {
    operator(&app, "ana", true, "agency:1").await;
    let home = "203.0.113.5";
    assert_eq!(sign_in_from(&app, home, "ana", PASSWORD).await.status, 200);
    // Guesses at ana's name from addresses that never signed in as her.
    for i in 0..operators::MAX_FAILURES_PER_NAME {
        sign_in_from(&app, &format!("198.51.100.{i}"), "ana", WRONG).await.err(401, "UNAUTHENTICATED");
    }
    // Past the limit, an unknown address waits (even with the right password)...
    sign_in_from(&app, "198.51.100.99", "ana", WRONG).await.err(429, "RATE_LIMITED");
    sign_in_from(&app, "192.0.2.9", "ana", PASSWORD).await.err(429, "RATE_LIMITED");
    // ...but ana's own address is never refused, and its typo does not count against her name.
    assert_eq!(sign_in_from(&app, home, "ana", PASSWORD).await.status, 200);
    sign_in_from(&app, home, "ana", WRONG).await.err(401, "UNAUTHENTICATED");
    assert_eq!(sign_in_from(&app, home, "ana", PASSWORD).await.status, 200);
    // Slowed, not locked: after the wait, one more attempt runs; each failure doubles the wait.
    let first = operators::unknown_client_delay_ms(operators::MAX_FAILURES_PER_NAME);
    assert_eq!(first, 1000);
    app.clock.advance(first);
    sign_in_from(&app, "198.51.100.50", "ana", WRONG).await.err(401, "UNAUTHENTICATED");
    let second = operators::unknown_client_delay_ms(operators::MAX_FAILURES_PER_NAME + 1);
    assert_eq!(second, 2 * first);
    app.clock.advance(second - 1);
    sign_in_from(&app, "192.0.2.9", "ana", PASSWORD).await.err(429, "RATE_LIMITED");
    app.clock.advance(1);
    // From a new address the right password gets in once the wait is over, and
    // that address is ana's own from then on.
    assert_eq!(sign_in_from(&app, "192.0.2.9", "ana", PASSWORD).await.status, 200);
    sign_in_from(&app, "198.51.100.51", "ana", WRONG).await.err(401, "UNAUTHENTICATED");
    sign_in_from(&app, "198.51.100.52", "ana", PASSWORD).await.err(429, "RATE_LIMITED");
    assert_eq!(sign_in_from(&app, "192.0.2.9", "ana", PASSWORD).await.status, 200);
    // The known addresses are keyed hashes: no address is stored.
    let stored = app
        .state
        .cx
        .read(|c| {
            use diesel::RunQueryDsl;
            #[derive(diesel::QueryableByName)]
            struct H {
                #[diesel(sql_type = diesel::sql_types::Text)]
                client_hash: String,
            }
            Ok(diesel::sql_query("SELECT client_hash FROM operator_known_clients").load::<H>(c)?)
        })
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    // 192.0.2.9 and 203.0.113.5 as rate-limit keys (hex), and as text.
    for h in stored {
        assert!(h.client_hash.len() == 64 && h.client_hash.bytes().all(|b| b.is_ascii_hexdigit()));
        for raw in ["c0000209", "cb007105", "192.0.2.9", "203.0.113.5"] {
            assert!(!h.client_hash.contains(raw), "{}", h.client_hash);
        }
    }
    // A new password forgets them: home is unknown again, and slowed while the guesses count.
    operator(&app, "ana", true, "agency:1").await;
    sign_in_from(&app, "198.51.100.53", "ana", WRONG).await.err(429, "RATE_LIMITED");
    sign_in_from(&app, home, "ana", PASSWORD).await.err(429, "RATE_LIMITED");
    app.clock.advance(operators::FAILURE_WINDOW_MS);
    assert_eq!(sign_in_from(&app, home, "ana", PASSWORD).await.status, 200);
});
