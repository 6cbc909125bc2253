//! The OpenAPI document: every route's handler is listed here, and its request
//! and answer types come from the handlers' own signatures.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{host, host_conversions, host_meta, ops};

#[derive(OpenApi)]
#[openapi(
    info(title = "rastrod", description = "Ad spend next to leads: host API, reports and operations."),
    paths(
        ops::health,
        host::ping,
        host::create_site,
        host::list_sites,
        host::get_site,
        host::update_site,
        host::record_lead,
        host::set_lead_stage,
        host::remove_lead,
        host::lead_journey,
        host::list_leads,
        host::set_pipeline,
        host::set_event_map,
        host::event_map,
        host::leads_report,
        host::leads_daily,
        host_meta::set_meta_connection,
        host_meta::connect_meta_with_code,
        host_meta::list_meta_ad_accounts,
        host_meta::meta_connection,
        host_meta::remove_meta_connection,
        host_meta::link_site_ad_account,
        host_meta::unlink_site_ad_account,
        host_meta::set_site_pixel,
        host_meta::remove_site_pixel,
        host_meta::remove_federated_meta_connection,
        host_conversions::meta_conversions,
    ),
    modifiers(&SecuritySchemes),
    tags((name = "host", description = "The host API, `Authorization: Bearer <host key>`"), (name = "meta", description = "The Meta connection, ad account links and pixels (host API)"), (name = "ops"))
)]
pub struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "hostKey",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}
