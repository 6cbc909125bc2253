//! The dashboard's people screen: a site's identified people, searchable,
//! and one person's profile, through the same services as the federated
//! `listPeople` and `getVisitorProfile`.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::session::signed_in;
use crate::error::Result;
use crate::service::analytics::people::{self, ListPeopleArgs, PeopleFilter, ProfileArgs};
use crate::service::analytics::reports::pages::PaginationOpts;
use crate::state::AppState;

/// One screen of people.
const PAGE: i64 = 25;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeopleQuery {
    search: Option<String>,
    cursor: Option<String>,
}

pub async fn list(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<String>,
    q: web::Query<PeopleQuery>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let q = q.into_inner();
    let args = ListPeopleArgs {
        site_id: path.into_inner(),
        filter: Some(PeopleFilter { search: q.search.filter(|s| !s.trim().is_empty()) }),
        pagination_opts: PaginationOpts {
            num_items: PAGE,
            cursor: q.cursor,
            end_cursor: None,
            id: None,
            maximum_rows_read: None,
            maximum_bytes_read: None,
        },
    };
    let key = crate::service::analytics::reports::api::cursor_key(&st.cx).await?;
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| people::list_people(c, &key, args)).await?))
}

pub async fn profile(
    st: web::Data<AppState>,
    req: HttpRequest,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse> {
    signed_in(&req)?;
    let (site_id, visitor_id) = path.into_inner();
    let args = ProfileArgs { site_id, visitor_id };
    Ok(HttpResponse::Ok().json(st.cx.read(move |c| people::get_visitor_profile(c, args)).await?))
}
