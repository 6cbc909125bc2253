// The calls to /dashboard/api/… and their errors.
import { state } from "./state.js";
import { t } from "./dom.js";

// What to show when a call answers 401 (the session ended): the entry module
// sets it, as the sign-in screen is not this module's to import.
var sessionEnded = function () {};
export function onSessionEnded(f) { sessionEnded = f; }

function ApiError(status, body) { this.status = status; this.code = body && body.code; this.message = body && body.message; }
export function api(method, path, body) {
  var opts = { method: method, credentials: "same-origin", headers: {} };
  if (method !== "GET") opts.headers["X-CSRF-Token"] = state.me ? state.me.csrfToken : "";
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  return fetch(path, opts).then(function (r) {
    return r.text().then(function (txt) {
      var data = null;
      try { data = txt ? JSON.parse(txt) : null; } catch (e) { data = null; }
      if (r.status === 401 && path !== "/dashboard/api/signin") { state.me = null; sessionEnded(); }
      if (!r.ok) throw new ApiError(r.status, data);
      return data;
    });
  });
}
export function explain(e) {
  if (e && e.status === 403) return t("forbidden");
  if (e && e.code === "CONFLICT") return t("conflict");
  return t("error", { message: (e && (e.message || e.code)) || String(e) });
}

// A web-analytics function by its federated name (same arguments, same answer).
export function fn(name, args) { return api("POST", "/dashboard/api/fn/" + name, args); }
