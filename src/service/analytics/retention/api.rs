//! Retention's use cases: `dataCoverage` (any reader), and the policy's
//! status, setting and disabling (the configure scope).

use super::coverage::{self, DataCoverage};
use super::{Disabled, Policy, RetentionStatus};
use crate::error::Result;
use crate::service::api::Caller;
use crate::service::api::decode::SiteArgs;
use crate::service::context::Context;

pub async fn data_coverage(cx: &Context, caller: &Caller, a: coverage::CoverageArgs) -> Result<DataCoverage> {
    caller.check_site(&a.site_id)?;
    let now = cx.now();
    cx.read(move |c| coverage::data_coverage(c, a, now)).await
}

pub async fn retention_status(cx: &Context, caller: &Caller, a: super::StatusArgs) -> Result<RetentionStatus> {
    caller.check_site(&a.site_id)?;
    let (now, interval) = (cx.now(), cx.config.retention_interval.as_millis() as i64);
    cx.read(move |c| super::status(c, a, now, interval)).await
}

pub async fn set_retention_policy(cx: &Context, caller: &Caller, a: super::SetPolicy) -> Result<Policy> {
    caller.check_site(&a.site_id)?;
    super::check(&a)?;
    let now = cx.now();
    cx.write_plain(move |c| super::set_policy(c, now, a)).await
}

pub async fn disable_retention_policy(cx: &Context, caller: &Caller, a: SiteArgs) -> Result<Disabled> {
    caller.check_site(&a.site_id)?;
    cx.write_plain(move |c| super::disable(c, &a.site_id)).await
}
