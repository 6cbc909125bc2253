//! Which methods each route takes, read from the OpenAPI document (every
//! served route is in it, but for the few listed here): a request on a known
//! path with another method is 405 with `Allow`, not 404.

use std::sync::OnceLock;

use actix_web::ResponseError;
use actix_web::dev::ResourceDef;
use utoipa::OpenApi;

/// Routes outside the document: operations plumbing and CORS preflights.
const UNDOCUMENTED: &[(&str, &[&str])] = &[
    ("/metrics", &["GET"]),
    ("/openapi.json", &["GET"]),
    ("/federation/{name}", &["POST", "OPTIONS"]),
    // One operation per function in the document (`openapi_functions`).
    ("/v1/analytics/{name}", &["POST"]),
    ("/api/{kind}", &["OPTIONS"]),
    // Meta's webhook (Lead Ads): its shapes are Meta's, described in the README; 404 while metaLeads is off.
    ("/rastro/meta/leadgen", &["GET", "POST"]),
];

fn table() -> &'static [(ResourceDef, Vec<&'static str>)] {
    static TABLE: OnceLock<Vec<(ResourceDef, Vec<&'static str>)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let doc = super::openapi::ApiDoc::openapi();
        let mut rows: Vec<(String, Vec<&'static str>)> = doc
            .paths
            .paths
            .iter()
            .map(|(path, item)| {
                let methods = [
                    ("GET", item.get.is_some()),
                    ("PUT", item.put.is_some()),
                    ("POST", item.post.is_some()),
                    ("DELETE", item.delete.is_some()),
                    ("PATCH", item.patch.is_some()),
                    ("OPTIONS", item.options.is_some()),
                ];
                (path.clone(), methods.iter().filter(|(_, on)| *on).map(|(m, _)| *m).collect())
            })
            .collect();
        for (path, methods) in UNDOCUMENTED {
            match rows.iter_mut().find(|(p, _)| p == path) {
                Some((_, have)) => add(have, methods),
                None => rows.push((path.to_string(), methods.to_vec())),
            }
        }
        rows.into_iter().map(|(p, m)| (ResourceDef::new(p), m)).collect()
    })
}

/// The methods the routes matching `path` take (empty: no such route).
pub fn methods_of(path: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for (def, methods) in table() {
        if def.is_match(path) {
            add(&mut out, methods);
        }
    }
    out
}

fn add(to: &mut Vec<&'static str>, methods: &[&'static str]) {
    for m in methods {
        if !to.contains(m) {
            to.push(m);
        }
    }
}

// The 404/405 answer lives here, beside the table it reads, so the error
// module stays below the handlers the table is built from.
/// No route matched: 405 when the path is a route under other methods (with
/// `Allow`), else 404.
pub async fn not_found(req: actix_web::HttpRequest) -> actix_web::HttpResponse {
    let allowed = methods_of(req.path());
    if allowed.is_empty() {
        return crate::error::Error::not_found("no such route").error_response();
    }
    let mut res =
        crate::error::Error::new(crate::error::Code::MethodNotAllowed, "this route does not take this method")
            .error_response();
    if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&allowed.join(", ")) {
        res.headers_mut().insert(actix_web::http::header::ALLOW, v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::methods_of;

    #[test]
    fn known_paths_know_their_methods() {
        assert_eq!(methods_of("/health"), vec!["GET"]);
        assert!(methods_of("/v1/sites/s1").contains(&"PATCH"));
        assert!(methods_of("/federation/listSites").contains(&"POST"));
        assert!(methods_of("/nope").is_empty());
        assert!(methods_of("/v1/sites/s1/nope").is_empty());
    }
}
