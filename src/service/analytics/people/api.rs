//! Identified people's use cases: `getVisitorProfile` and `listPeople`.

use super::{PersonRow, VisitorProfile};
use crate::error::Result;
use crate::service::analytics::reports::pages::Page;
use crate::service::api::Caller;
use crate::service::context::Context;

pub async fn get_visitor_profile(
    cx: &Context,
    caller: &Caller,
    a: super::ProfileArgs,
) -> Result<Option<VisitorProfile>> {
    caller.check_site(&a.site_id)?;
    cx.read(move |c| super::get_visitor_profile(c, a)).await
}

pub async fn list_people(cx: &Context, caller: &Caller, a: super::ListPeopleArgs) -> Result<Page<PersonRow>> {
    caller.check_site(&a.site_id)?;
    let key = crate::service::analytics::reports::api::cursor_key(cx).await?;
    cx.read(move |c| super::list_people(c, &key, a)).await
}
