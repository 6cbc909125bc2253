//! Tracked links' use cases: list (any reader), create, update, delete (the
//! configure scope). A create or update answers the link's id.

use super::Removed;
use crate::error::Result;
use crate::service::api::Caller;
use crate::service::context::Context;

pub async fn list_tracked_links(cx: &Context, caller: &Caller, a: super::ListArgs) -> Result<Vec<super::TrackedLink>> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| super::list(c, a)).await
}

pub async fn create_tracked_link(cx: &Context, caller: &Caller, a: super::CreateArgs) -> Result<String> {
    caller.check_site(&a.site_id)?;
    super::check_create(&a)?;
    let now = cx.now();
    cx.write_plain(move |c| super::create(c, now, a)).await
}

pub async fn update_tracked_link(cx: &Context, caller: &Caller, a: super::UpdateArgs) -> Result<String> {
    caller.check_site(&a.site_id)?;
    super::check_update(&a)?;
    let now = cx.now();
    cx.write_plain(move |c| super::update(c, now, a)).await
}

pub async fn delete_tracked_link(cx: &Context, caller: &Caller, a: super::LinkArgs) -> Result<Removed> {
    caller.check_site(&a.site_id)?;
    cx.write_plain(move |c| super::delete(c, a)).await
}
