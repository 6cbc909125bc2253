//! The OpenAPI document: every route's handler is listed here, and its request
//! and answer types come from the handlers' own signatures.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{csv, federation, host, links, ops, tracker};

#[derive(OpenApi)]
#[openapi(
    info(title = "rastrod", description = "Ad spend next to leads: host API, reports and operations."),
    paths(
        ops::health,
        host::ping,
        host::sites::create_site,
        host::sites::list_sites,
        host::sites::get_site,
        host::sites::update_site,
        host::leads::record_lead,
        host::leads::set_lead_stage,
        host::leads::remove_lead,
        host::leads::lead_journey,
        host::leads::list_leads,
        host::leads::set_pipeline,
        host::leads::set_event_map,
        host::leads::event_map,
        host::leads::leads_report,
        host::leads::leads_daily,
        host::meta::set_meta_connection,
        host::meta::connect_meta_with_code,
        host::meta::list_meta_ad_accounts,
        host::meta::meta_connection,
        host::meta::remove_meta_connection,
        host::meta::link_site_ad_account,
        host::meta::unlink_site_ad_account,
        host::meta::set_site_pixel,
        host::meta::remove_site_pixel,
        host::meta::remove_federated_meta_connection,
        host::meta::meta_unlink_preview,
        host::meta::sync_meta_now,
        host::meta::meta_status,
        host::lead_ads::set_form_lead_handler,
        host::lead_ads::remove_form_lead_handler,
        ops::thumbnail,
        host::conversions::meta_conversions,
        host::analytics::import_events,
        host::analytics::export_events,
        csv::reports::report_csv,
        csv::leads::leads_csv,
        host::ledger::record_conversion,
        host::people::identify_visitor,
        host::people::forget_person,
        tracker::health,
        tracker::tracker_js,
        tracker::events,
        links::redirect,
        host::federation::provision_connection,
        host::federation::get_grant,
        host::federation::revoke_connection,
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
