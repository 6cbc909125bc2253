//! The page's static files, compiled into the binary: nothing to build with
//! Node, nothing to install next to the daemon.

use actix_web::http::header;
use actix_web::{HttpResponse, web};

use crate::error::{Error, Result};

/// A JavaScript module, served as the browser requires of `<script type="module">`
/// and its `import`s (a JavaScript content type; `nosniff` holds it to that).
macro_rules! module {
    ($name:literal) => {
        ($name, "text/javascript; charset=utf-8", include_str!(concat!("../../../assets/dashboard/", $name)))
    };
}

/// (name, content type, body). Names are the only paths served. The page's
/// script is native ES modules, with no build step: `app.js` is the entry
/// (`index.html` loads it as `type="module"`), which imports the rest by
/// relative path, all from this table.
pub const FILES: &[(&str, &str, &str)] = &[
    module!("app.js"),
    module!("state.js"),
    module!("dom.js"),
    module!("api.js"),
    module!("strings.pt-BR.js"),
    module!("signin.js"),
    module!("leads.js"),
    module!("visits.js"),
    module!("people.js"),
    module!("journeys.js"),
    module!("panels.js"),
    module!("chart.js"),
    module!("sitemap.js"),
    module!("vitals.js"),
    module!("goals.js"),
    module!("definitions.js"),
    module!("funnels.js"),
    module!("links.js"),
    module!("integrations.js"),
    module!("leadads.js"),
    module!("retorno.js"),
    ("app.css", "text/css; charset=utf-8", include_str!("../../../assets/dashboard/app.css")),
];

const INDEX: &str = include_str!("../../../assets/dashboard/index.html");
const CALLBACK: &str = include_str!("../../../assets/dashboard/retorno.html");

/// Scripts (the page's ES modules and every module they import) and styles
/// from this origin only, no inline code, no framing; the login popup is the
/// only other window the page talks to (postMessage).
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

fn html(body: &'static str) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CSP))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        // The callback's URL holds the login code: never send it on as a referrer.
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(body)
}

/// The page (open: it signs in with its own form, and every read behind it
/// needs a session).
pub async fn index() -> HttpResponse {
    html(INDEX)
}

/// `/meta/retorno`: the Facebook Login popup lands here and hands
/// `{code, state}` to the page that opened it.
pub async fn callback() -> HttpResponse {
    html(CALLBACK)
}

pub async fn asset(name: web::Path<String>) -> Result<HttpResponse> {
    let name = name.into_inner();
    let (_, kind, body) =
        FILES.iter().find(|(n, _, _)| *n == name).ok_or_else(|| Error::not_found("no such dashboard file"))?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, *kind))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .body(*body))
}

/// Every file's size, for the page-weight test and the README.
pub fn total_bytes() -> usize {
    INDEX.len() + FILES.iter().map(|(_, _, b)| b.len()).sum::<usize>()
}
