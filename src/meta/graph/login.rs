//! The Login for Business exchanges of the one Graph client: a code for a
//! token, a short-lived token for a long-lived one, and how long a token lives.
//! The app secret and the code travel only in a form body (Meta's contract).

use serde_json::Value;

use super::errors::Endpoint;
use super::{ErrorClass, Graph, GraphClient, GraphError, TokenGrant, TokenInfo, check_id, malformed};
use crate::config::Secret;

impl GraphClient {
    /// `POST /oauth/access_token` trading a Login for Business code (form body: client_id,
    /// client_secret, redirect_uri, code). A refused code is [`ErrorClass::TokenRefused`],
    /// a refused app id or secret [`ErrorClass::AppRefused`].
    pub async fn exchange_code(
        &self,
        app_id: &str,
        app_secret: &Secret,
        redirect_uri: &str,
        code: &Secret,
    ) -> Result<Graph<TokenGrant>, GraphError> {
        let op = "exchange_code";
        check_id(op, app_id)?;
        let form = [
            ("client_id", app_id),
            ("client_secret", app_secret.expose()),
            ("redirect_uri", redirect_uri),
            ("code", code.expose()),
        ];
        self.token_call(op, &form).await
    }

    /// `POST /oauth/access_token` with `grant_type=fb_exchange_token`: a short-lived token
    /// for a long-lived one (about 60 days).
    pub async fn exchange_long_lived(
        &self,
        app_id: &str,
        app_secret: &Secret,
        token: &Secret,
    ) -> Result<Graph<TokenGrant>, GraphError> {
        let op = "exchange_long_lived";
        check_id(op, app_id)?;
        let form = [
            ("grant_type", "fb_exchange_token"),
            ("client_id", app_id),
            ("client_secret", app_secret.expose()),
            ("fb_exchange_token", token.expose()),
        ];
        self.token_call(op, &form).await
    }

    /// `GET /debug_token?input_token=…` with the app's token in the header: how long a token
    /// lives. A refused app token is [`ErrorClass::AppRefused`].
    pub async fn debug_token(
        &self,
        app_id: &str,
        app_secret: &Secret,
        input_token: &Secret,
    ) -> Result<Graph<TokenInfo>, GraphError> {
        let op = "debug_token";
        check_id(op, app_id)?;
        let url = self.url(op, "debug_token", &[("input_token", input_token.expose())])?;
        let app_token = format!("{app_id}|{}", app_secret.expose());
        let req = self.api.get(url).bearer_auth(&app_token);
        let (v, usage) = self.call(op, Endpoint::DebugToken, req).await?;
        let data = v.get("data").filter(|d| d.is_object()).ok_or_else(|| malformed(op, usage))?;
        let int = |key: &str| match data.get(key) {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        let string = |key: &str| match data.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let info = TokenInfo {
            is_valid: data.get("is_valid").and_then(Value::as_bool).unwrap_or(false),
            expires_at: int("expires_at").filter(|&t| t > 0),
            token_type: string("type"),
            app_id: string("app_id"),
            user_id: string("user_id"),
            scopes: data
                .get("scopes")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
        };
        Ok(Graph { value: info, usage })
    }

    async fn token_call(&self, op: &'static str, form: &[(&str, &str)]) -> Result<Graph<TokenGrant>, GraphError> {
        let url = self.url(op, "oauth/access_token", &[])?;
        let (v, usage) = self.call(op, Endpoint::Exchange, self.api.post(url).form(form)).await?;
        let access_token =
            v.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty()).map(Secret::new).ok_or_else(
                || GraphError { usage, ..GraphError::local(op, ErrorClass::Invalid, "the answer has no token") },
            )?;
        let expires_in = match v.get("expires_in") {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        let token_type = v.get("token_type").and_then(Value::as_str).map(str::to_string);
        Ok(Graph { value: TokenGrant { access_token, token_type, expires_in }, usage })
    }
}
