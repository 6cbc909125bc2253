//! `GET /{version}/dialog/oauth`: the fake's Facebook Login for Business
//! dialog, so the dashboard's popup flow runs end to end in tests and in the
//! demo. "Continuar" sends the browser to `redirect_uri?code=…&state=…`, as
//! Meta does; "Cancelar" to `redirect_uri?error=access_denied&state=…`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};

use super::reply::{get, parse_query};

fn escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub async fn dialog(req: HttpRequest) -> HttpResponse {
    let q = parse_query(req.query_string()).unwrap_or_default();
    let redirect = get(&q, "redirect_uri").unwrap_or("");
    let state = get(&q, "state").unwrap_or("");
    if !(redirect.starts_with("http://") || redirect.starts_with("https://")) || state.is_empty() {
        return HttpResponse::BadRequest().content_type("text/plain; charset=utf-8").body("redirect_uri and state");
    }
    let sep = if redirect.contains('?') { '&' } else { '?' };
    // A fresh code each time (any code logs in under the fake).
    let code = format!("fake-login-code-{}", crate::ids::token().unwrap_or_default());
    let ok = format!("{redirect}{sep}code={}&state={}", encode(&code), encode(state));
    let cancel = format!("{redirect}{sep}error=access_denied&state={}", encode(state));
    let body = format!(
        "<!doctype html><html lang=\"pt-BR\"><head><meta charset=\"utf-8\"><title>Entrar com o Facebook (falso)</title>\
         <meta name=\"viewport\" content=\"width=device-width\"></head>\
         <body style=\"font-family:sans-serif;max-width:30rem;margin:2rem auto\"><main>\
         <h1>Amage Rastro quer acessar sua empresa</h1>\
         <p>Meta falsa (demonstração e testes): escolha continuar para compartilhar as contas de anúncio \
         e os pixels da agência de exemplo.</p>\
         <p><a id=\"continuar\" href=\"{}\">Continuar</a> · <a id=\"cancelar\" href=\"{}\">Cancelar</a></p>\
         </main></body></html>",
        escape(&ok),
        escape(&cancel)
    );
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .body(body)
}
