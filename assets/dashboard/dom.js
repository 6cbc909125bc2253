// Element helpers and formatting: every element is built by `h` (strings
// become text nodes, never HTML), every word comes from the strings file (the
// only module that names it), counts and dates are formatted with Intl.
import S from "./strings.pt-BR.js";
import { state, tz, render } from "./state.js";

export { S };

export function t(key, vars) {
  var s = S[key] == null ? key : S[key];
  if (vars) Object.keys(vars).forEach(function (k) { s = s.split("{" + k + "}").join(String(vars[k])); });
  return s;
}
// Builds an element; strings become text nodes (never HTML).
export function h(tag, attrs) {
  var el = document.createElement(tag);
  var a = attrs || {};
  Object.keys(a).forEach(function (k) {
    var v = a[k];
    if (v == null || v === false) return;
    if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  });
  for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
  return el;
}
// Appends every argument after the first: nodes, strings, numbers, arrays of them.
export function add(el) {
  for (var i = 1; i < arguments.length; i++) {
    var c = arguments[i];
    if (c == null || c === false) continue;
    if (Array.isArray(c)) c.forEach(function (x) { add(el, x); });
    else el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}
var intFmt = new Intl.NumberFormat(S.locale);
var pctFmt = new Intl.NumberFormat(S.locale, { style: "percent", maximumFractionDigits: 1 });
export const decFmt = new Intl.NumberFormat(S.locale, { maximumFractionDigits: 4 });
export function num(n) { return n == null ? S.unknown : intFmt.format(n); }
export function date(ms, withTime, zone) {
  if (ms == null) return S.unknown;
  var o = { timeZone: zone || tz(), day: "2-digit", month: "2-digit", year: "numeric" };
  if (withTime) { o.hour = "2-digit"; o.minute = "2-digit"; }
  return new Intl.DateTimeFormat(S.locale, o).format(new Date(ms));
}

export function say(box, msg, kind) {
  box.replaceChildren();
  if (msg) add(box, h("div", { class: kind || "error", role: kind === "ok" ? "status" : "alert" }, msg));
}
export function root() { return document.getElementById("app"); }
// Replaces an element's children (skipping the absent ones, unlike replaceChildren).
export function fill(el) { el.replaceChildren(); add.apply(null, arguments); }

export function rate(x) { return x == null ? S.unknown : pctFmt.format(x); }
export function duration(ms) {
  if (ms == null) return S.unknown;
  var sec = Math.round(ms / 1000);
  return Math.floor(sec / 60) + " min " + String(sec % 60).padStart(2, "0") + " s";
}

// A table with a heading; the first cell of a row is its header cell.
// `opts.csv`: a "Baixar CSV" beside the heading; `opts.dim`: the first cells
// become filters when clicked (`opts.list`: which list, "filters" or
// "leadFilters"; `opts.values[i]`: the value behind row i's text).
export function grid(id, title, head, rows, empty, opts) {
  var o = opts || {};
  var head0 = title || o.csv ? h("div", { class: "row between" }, title ? h("h3", {}, title) : h("span"), o.csv || null) : null;
  return h("section", {}, head0, rows.length
    ? h("table", { id: id }, h("thead", {}, h("tr", {}, head.map(function (c, i) { return h("th", { scope: "col", class: i ? "n" : null }, c); }))),
        h("tbody", {}, rows.map(function (row, r) {
          var value = o.values ? o.values[r] : row[0];
          var first = o.dim && value != null
            ? h("button", { class: "link", "data-add-filter": o.dim, title: t("addFilter"), onclick: function () { addFilter(o.dim, value, o.list, row[0]); } }, row[0])
            : row[0] == null ? S.unknown : row[0];
          return h("tr", {}, h("th", { scope: "row" }, first), row.slice(1).map(function (c) { return h("td", { class: "n" }, c); }));
        })))
    : h("p", {}, empty));
}

// The change against the period before, as "▲ 12%" (null: no base to
// compare), green when it is good news (`lowerIsBetter` for the bounce rate;
// `neutral` for what is neither, as the spend).
export function change(x, lowerIsBetter, neutral) {
  if (x == null) return h("span", { class: "chg muted" }, t("noChange"));
  var up = x > 0, pct = new Intl.NumberFormat(S.locale, { style: "percent", maximumFractionDigits: 1 }).format(Math.abs(x));
  var good = lowerIsBetter ? !up : up;
  return h("span", { class: "chg " + (x === 0 || neutral ? "" : good ? "good" : "bad") }, (x === 0 ? "= " : up ? "▲ " : "▼ ") + pct);
}

export function money(cents, currency) {
  if (cents == null) return S.unknown;
  return new Intl.NumberFormat(S.locale, { style: "currency", currency: currency || "BRL" }).format(cents / 100);
}

var SVG = "http://www.w3.org/2000/svg";
export function s(tag, attrs) {
  var el = document.createElementNS(SVG, tag);
  Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
  for (var i = 2; i < arguments.length; i++) if (arguments[i]) el.appendChild(typeof arguments[i] === "string" ? document.createTextNode(arguments[i]) : arguments[i]);
  return el;
}

export function dialog(title, content, actions) {
  var d = h("dialog", { "aria-labelledby": "dlg-h" }, h("h2", { id: "dlg-h" }, title), content,
    h("div", { class: "actions" }, actions || [], h("button", { onclick: function () { d.close(); } }, t("close"))));
  d.addEventListener("close", function () { d.remove(); });
  document.body.appendChild(d);
  d.showModal();
  return d;
}

export function pickers(onChange) {
  var sel = h("select", { id: "site-picker", onchange: function () { state.siteId = sel.value; onChange(); } },
    h("option", { value: "" }, t("siteAll")),
    state.sites.map(function (s) { return h("option", { value: s.siteId, selected: s.siteId === state.siteId }, s.name); }));
  var days = h("select", { id: "range-picker", onchange: function () { state.days = Number(days.value); onChange(); } },
    [7, 30, 90].map(function (n) { return h("option", { value: n, selected: n === state.days }, t("rangeDays", { n: n })); }));
  return h("div", { class: "row" }, h("label", { for: "site-picker" }, t("sitePicker"), sel), h("label", { for: "range-picker" }, t("rangePicker"), days));
}

// ---- the filters (REPORTING §3): chips over the figures, shared by the screens ----
// `list` is "filters" (the visits' dimensions) or "leadFilters" (the leads').
export function filterBar(note, list) {
  var key = list || "filters", filters = state[key];
  if (!filters.length) return null;
  return h("div", { class: "row filters", id: "filters", role: "group", "aria-label": t("filtersLabel") },
    filters.map(function (f, i) {
      var names = f.values.map(function (v) { return state.filterNames[f.dim + "\u0000" + v] || v; });
      var label = t("dim_" + f.dim) + " " + t("op_" + f.op) + " " + names.join(", ");
      return h("span", { class: "chip", "data-filter": f.dim }, label,
        h("button", { "aria-label": t("removeFilter", { filter: label }), onclick: function () { state[key].splice(i, 1); render(); } }, "×"));
    }),
    h("button", { id: "clear-filters", onclick: function () { state[key] = []; render(); } }, t("clearFilters")),
    note ? h("span", { class: "muted" }, note) : null);
}

// A row clicked: its value becomes the dimension's filter (replacing one on
// the same dimension); `name` is what the chip shows for an id.
export function addFilter(dim, value, list, name) {
  var key = list || "filters";
  if (name != null && name !== value) state.filterNames[dim + "\u0000" + value] = String(name);
  state[key] = state[key].filter(function (f) { return f.dim !== dim; }).concat([{ dim: dim, op: "is", values: [value] }]);
  render();
}

// The arguments with the list's filters, when there are any.
export function withFilters(args, list) {
  var filters = state[list || "filters"];
  return filters.length ? Object.assign({}, args, { filters: filters }) : args;
}
