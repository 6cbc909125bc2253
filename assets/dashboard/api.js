// The calls to /dashboard/api/… and their errors.
import { state } from "./state.js";
import { t, h, say } from "./dom.js";

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

// "Baixar CSV": the host's CSV of a report (the same file), for the screen's
// arguments, saved under the name the daemon gives it.
export function downloadCsv(name, breakdown, args) {
  var path = "/dashboard/api/reports/" + name + ".csv" + (breakdown ? "?breakdown=" + encodeURIComponent(breakdown) : "");
  return save(path, { method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": state.me ? state.me.csrfToken : "" }, body: JSON.stringify(args) }, name + ".csv");
}

// The file a call answers, saved as the browser saves a download.
function save(path, init, fallback) {
  return fetch(path, init).then(function (r) {
    if (!r.ok) return r.json().then(function (b) { throw new ApiError(r.status, b); });
    var file = /filename="([^"]+)"/.exec(r.headers.get("content-disposition") || "");
    return r.blob().then(function (blob) {
      var a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = file ? file[1] : fallback;
      document.body.appendChild(a);
      a.click();
      setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
    });
  });
}

// A "Baixar CSV" button for one table: the file of `name` (its `table`) for
// the screen's own arguments, with a status for a refusal.
export function csvButton(name, table, args) {
  var box = h("span", { role: "status" });
  return h("span", {}, h("button", { class: "csv", "data-csv": table || name, "data-report": name, onclick: function () {
    downloadCsv(name, table, args).catch(function (e) { say(box, explain(e)); });
  } }, t("downloadCsv")), box);
}

// "Baixar CSV" of a client's leads: the host's `leads.csv` for the range and filters.
export function leadsCsvButton(siteId, query) {
  var box = h("span", { role: "status" });
  var path = "/dashboard/api/sites/" + encodeURIComponent(siteId) + "/leads.csv?" + query;
  return h("span", {}, h("button", { class: "csv", "data-csv": "leads", onclick: function () {
    save(path, { credentials: "same-origin" }, "leads.csv").catch(function (e) { say(box, explain(e)); });
  } }, t("downloadCsv")), box);
}
