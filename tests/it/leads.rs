use serde_json::json;

use crate::backend_test;
use crate::common::*;

// rule: LEAD-01
backend_test!(record_lead_is_once_per_key, |app| {
    app.site("s1").await;
    let first = app.lead("s1", "c1", T0, json!({"label": "Ana"})).await;
    assert_eq!(first.status, 201);
    let id = first.body["leadId"].as_str().unwrap().to_string();
    let again = app.lead("s1", "c1", T0 + 5, json!({"label": "Outra", "origin": "organic", "eventId": "c1-other"})).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, json!({"leadId": id, "created": false}));
    let leads = app.get(&format!("/v1/leads?siteIds=s1&from={}&to={}", T0 - DAY, T0 + DAY)).await.ok();
    assert_eq!(leads.as_array().unwrap().len(), 1);
    assert_eq!(leads[0]["label"], "Ana");
    assert_eq!(leads[0]["origin"], "ctwa_ad");
    assert_eq!(leads[0]["firstAt"], T0);
});
