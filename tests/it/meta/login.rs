//! Login codes Meta refuses, whatever its reason, are META_TOKEN_INVALID.

use serde_json::json;

use crate::backend_test;
use crate::common::*;

// rule: CONN-04
backend_test!(a_refused_login_code_is_meta_token_invalid, fake_meta_builder, |app| {
    // The fake refuses these with code 100 and subcode 36007 (malformed),
    // 36008 (used already), 36009 (another redirect URI) or no subcode.
    for code in ["invalid-code", "used-code-1", "other-redirect-1", "refused-code-1"] {
        let body = json!({"code": code, "redirectUri": "https://app.example.com/meta/retorno"});
        let a = app.post("/v1/meta/owners/agency:1/connection/code", body).await;
        a.err(400, "META_TOKEN_INVALID");
        assert!(!a.text.contains(code), "{}", a.text);
    }
    assert_eq!(app.get("/v1/meta/owners/agency:1/connection").await.ok(), serde_json::Value::Null);
});
