//! Retention's use cases: `dataCoverage` (any reader), and the policy's
//! status, setting and disabling (the configure scope).

use serde_json::Value;

use super::coverage;
use crate::error::Result;
use crate::service::api::Caller;
use crate::service::api::decode::SiteArgs;
use crate::service::context::Context;

pub async fn data_coverage(cx: &Context, caller: &Caller, a: coverage::CoverageArgs) -> Result<Value> {
    caller.check_site(&a.site_id)?;
    let now = cx.now();
    cx.read(move |c| coverage::data_coverage(c, a, now)).await
}

pub async fn retention_status(cx: &Context, caller: &Caller, a: super::StatusArgs) -> Result<Value> {
    caller.check_site(&a.site_id)?;
    let (now, interval) = (cx.now(), cx.config.retention_interval.as_millis() as i64);
    cx.read(move |c| super::status(c, a, now, interval)).await
}

pub async fn set_retention_policy(cx: &Context, caller: &Caller, a: super::SetPolicy) -> Result<Value> {
    caller.check_site(&a.site_id)?;
    super::check(&a)?;
    let now = cx.now();
    cx.write_plain(move |c| super::set_policy(c, now, a)).await
}

pub async fn disable_retention_policy(cx: &Context, caller: &Caller, a: SiteArgs) -> Result<Value> {
    caller.check_site(&a.site_id)?;
    cx.write_plain(move |c| super::disable(c, &a.site_id)).await
}
