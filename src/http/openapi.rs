//! The OpenAPI document: every route's handler is listed here, and its request
//! and answer types come from the handlers' own signatures.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    federation, host, host_analytics, host_conversions, host_federation, host_ledger, host_meta, host_people, links,
    ops, tracker,
};

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
        host_meta::meta_unlink_preview,
        host_meta::sync_meta_now,
        host_meta::meta_status,
        ops::thumbnail,
        host_conversions::meta_conversions,
        host_analytics::import_events,
        host_analytics::export_events,
        host_ledger::record_conversion,
        host_people::identify_visitor,
        host_people::forget_person,
        tracker::health,
        tracker::tracker_js,
        tracker::events,
        links::redirect,
        host_federation::provision_connection,
        host_federation::get_grant,
        host_federation::revoke_connection,
        federation::manifest,
        federation::call,
        federation::convex_query,
        federation::convex_mutation,
        federation::convex_action,
        federation::convex_function,
    ),
    modifiers(&SecuritySchemes, &ErrorCodes),
    tags((name = "host", description = "The host API, `Authorization: Bearer <host key>`"), (name = "meta", description = "The Meta connection, ad account links and pixels (host API)"), (name = "federation-host", description = "Local grants of dashboard connections (host API)"), (name = "analytics", description = "Web analytics: the tracker's routes (open) and the host's import and export"), (name = "federation", description = "The federated API, `Authorization: Bearer <JWT>`: REST and Convex's wire format"), (name = "ops"))
)]
pub struct ApiDoc;

/// `ErrorBody.code` lists every code of `Code::ALL`, with its HTTP status: the
/// document cannot drift from the enum.
struct ErrorCodes;

impl Modify for ErrorCodes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

        use crate::error::Code;
        let Some(components) = openapi.components.as_mut() else { return };
        let Some(RefOr::T(Schema::Object(body))) = components.schemas.get_mut("ErrorBody") else { return };
        let listed: Vec<String> = Code::ALL.iter().map(|c| format!("`{}` ({})", c.as_str(), c.http_status())).collect();
        let code = ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(Code::ALL.iter().map(|c| c.as_str())))
            .description(Some(format!("A stable machine code: {}.", listed.join(", "))));
        body.properties.insert("code".to_string(), code.into());
    }
}

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "hostKey",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "federationJwt",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
    }
}
