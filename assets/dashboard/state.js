// What the page knows: the signed-in operator, the sites, the screen and its
// picks, and what follows from them. Imports nothing.
export const DAY = 86400000;
// The picks a screen starts from, and a link without them means.
const DEFAULTS = { view: "leads", siteId: "", days: 30, period: "30", customFrom: "", customTo: "", zone: "" };
export const state = Object.assign({ me: null, sites: [], leadsPage: [], loginState: null,
  // Visitas: the period (a preset or "custom" with its two dates), the zone
  // picked for several clients, and the filters (REPORTING §3): the visits'
  // (shared by Visitas, Metas e receita, Mapa do site and Vitals) and the
  // leads' (Leads e gasto), with the names shown for ids (campaigns, ads).
  filters: [], leadFilters: [], filterNames: {},
  // The live stream the screen follows (Visitas), closed when it is redrawn.
  stream: null }, DEFAULTS);

// ---- the address: links that can be shared ---------------------------------
// What a screen shows (its view, client, days or period, zone and filters)
// lives in the address after "#", so a reload, Back and a pasted link give
// the same screen. Only what differs from the defaults is written.
export function toHash() {
  var p = new URLSearchParams();
  Object.keys(DEFAULTS).forEach(function (k) {
    if (state[k] !== DEFAULTS[k] && state[k] !== "" && state[k] != null) p.set(k, String(state[k]));
  });
  var names = {};
  ["filters", "leadFilters"].forEach(function (k) {
    if (!state[k].length) return;
    p.set(k, JSON.stringify(state[k]));
    state[k].forEach(function (f) {
      f.values.forEach(function (v) { var n = state.filterNames[f.dim + "\u0000" + v]; if (n) names[f.dim + ":" + v] = n; });
    });
  });
  if (Object.keys(names).length) p.set("names", JSON.stringify(names));
  return "#" + p.toString();
}

// Reads the picks back from an address; anything unreadable is the default.
export function fromHash(hash) {
  var p = new URLSearchParams((hash || "").replace(/^#/, ""));
  Object.keys(DEFAULTS).forEach(function (k) {
    var v = p.get(k);
    state[k] = v == null ? DEFAULTS[k] : k === "days" ? ([7, 30, 90].indexOf(Number(v)) >= 0 ? Number(v) : DEFAULTS.days) : v;
  });
  function parsed(text, fallback) { try { return text ? JSON.parse(text) : fallback; } catch (e) { return fallback; } }
  function filters(text) {
    var v = parsed(text, []);
    return Array.isArray(v) ? v.filter(function (f) {
      return f && typeof f.dim === "string" && typeof f.op === "string" && Array.isArray(f.values) && f.values.every(function (x) { return typeof x === "string"; });
    }).map(function (f) { return { dim: f.dim, op: f.op, values: f.values }; }) : [];
  }
  state.filters = filters(p.get("filters"));
  state.leadFilters = filters(p.get("leadFilters"));
  var names = parsed(p.get("names"), {});
  state.filterNames = {};
  if (names && typeof names === "object") Object.keys(names).forEach(function (k) {
    var i = k.indexOf(":");
    if (i > 0 && typeof names[k] === "string") state.filterNames[k.slice(0, i) + "\u0000" + k.slice(i + 1)] = names[k];
  });
}

// The entry module draws the current screen; a screen asks for a redraw here,
// so no screen imports the entry module.
var draw = function () {};
export function onRender(f) { draw = f; }
export function render() { draw(); }

export function site(id) { return state.sites.find(function (s) { return s.siteId === id; }); }
export function tz() { var s = site(state.siteId) || state.sites[0]; return (s && s.timezone) || "UTC"; }
export function canWrite() { return state.me && state.me.operator.canConfigure; }

export function oneSite() { return state.siteId || (state.sites[0] && state.sites[0].siteId); }

// The last `state.days` days up to the end of today in the zone (at most 90:
// the reports' ceiling), for the one-client screens.
export function localDays() {
  var z = zone(), n = localDate(state.me.now, z), k = Math.min(state.days, 90);
  return { from: midnight(n.y, n.m, n.d - k + 1, z), to: midnight(n.y, n.m, n.d + 1, z) - 1, zone: z };
}

// The leads screen's range: the whole days before today, in the zone (REPORTING §1).
export function range() {
  var z = zone(), n = localDate(state.me.now, z);
  return { from: midnight(n.y, n.m, n.d - state.days, z), to: midnight(n.y, n.m, n.d, z) - 1 };
}
export function siteIds() { return state.siteId ? [state.siteId] : state.sites.slice(0, 500).map(function (s) { return s.siteId; }); }

// ---- local days (REPORTING §1) --------------------------------------------
// The zone the screens count days in: the chosen client's, or for several
// the one picked (by default the first client's).
export function zone() {
  var s = site(state.siteId);
  if (s) return s.timezone || "UTC";
  return state.zone || (state.sites[0] && state.sites[0].timezone) || "UTC";
}
export function zones() {
  var seen = {};
  state.sites.forEach(function (s) { seen[s.timezone || "UTC"] = true; });
  return Object.keys(seen).sort();
}
// The zone's wall clock at the instant t, written as if it were UTC.
function wall(t, z) {
  var parts = new Intl.DateTimeFormat("en-US", { timeZone: z, hourCycle: "h23", year: "numeric", month: "2-digit",
    day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" }).formatToParts(new Date(t));
  var g = {};
  parts.forEach(function (p) { g[p.type] = Number(p.value); });
  return Date.UTC(g.year, g.month - 1, g.day, g.hour, g.minute, g.second) + (((t % 1000) + 1000) % 1000);
}
// The first instant of the local date (y, m from 0, d; out-of-range days roll over) in z.
export function midnight(y, m, d, z) {
  var guess = Date.UTC(y, m, d), t = guess - (wall(guess, z) - guess);
  return guess - (wall(t, z) - t);
}
// The local date of t in z, as {y, m, d} (m from 0).
export function localDate(t, z) {
  var w = new Date(wall(t, z));
  return { y: w.getUTCFullYear(), m: w.getUTCMonth(), d: w.getUTCDate() };
}
function parseDate(text) {
  var p = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text || "");
  return p ? { y: Number(p[1]), m: Number(p[2]) - 1, d: Number(p[3]) } : null;
}
// The period picked on Visitas, in the zone: {from, to, interval}. Today and
// yesterday are hourly; the others whole local days, today included.
export function period() {
  var z = zone(), n = localDate(state.me.now, z), end = midnight(n.y, n.m, n.d + 1, z) - 1;
  function days(k) { return { from: midnight(n.y, n.m, n.d - k + 1, z), to: end, interval: "day" }; }
  // Hour by hour in the zone's own hours (at :30 or :45 of UTC's in Kolkata
  // or Kathmandu).
  function hourly(from, to) { return { from: from, to: to, interval: "hour" }; }
  switch (state.period) {
    case "today": return hourly(midnight(n.y, n.m, n.d, z), end);
    case "yesterday": return hourly(midnight(n.y, n.m, n.d - 1, z), midnight(n.y, n.m, n.d, z) - 1);
    case "month": return { from: midnight(n.y, n.m, 1, z), to: end, interval: "day" };
    case "lastMonth": return { from: midnight(n.y, n.m - 1, 1, z), to: midnight(n.y, n.m, 1, z) - 1, interval: "day" };
    case "year": return { from: midnight(n.y, 0, 1, z), to: end, interval: "day" };
    case "12m": return { from: midnight(n.y - 1, n.m, n.d + 1, z), to: end, interval: "day" };
    case "custom": {
      var a = parseDate(state.customFrom), b = parseDate(state.customTo);
      if (a && b) return { from: midnight(a.y, a.m, a.d, z), to: midnight(b.y, b.m, b.d + 1, z) - 1, interval: "day" };
      return days(30);
    }
    default: return days(Number(state.period) || 30);
  }
}
