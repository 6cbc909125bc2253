// ---- visits (web analytics) ----------------------------------------------
// The overview in the client's own days (its timezone, named on screen),
// beside the period before it, narrowed by the filters above the figures: a
// row of the pages or sources clicked becomes a filter, as in Plausible.
import { state, siteIds, render, zone, zones, period } from "./state.js";
import { S, t, h, add, num, date, say, fill, rate, duration, grid, filterBar, withFilters, decFmt, change } from "./dom.js";
import { chart } from "./chart.js";
import { api, explain, csvButton } from "./api.js";
import { sessionsSection, visitorDialog, recent } from "./journeys.js";
import { panels } from "./panels.js";

var PERIODS = ["today", "yesterday", "7", "30", "90", "month", "lastMonth", "year", "12m", "custom"];

function periodPicker() {
  var sel = h("select", { id: "site-picker", onchange: function () { state.siteId = sel.value; render(); } },
    h("option", { value: "" }, t("siteAll")),
    state.sites.map(function (x) { return h("option", { value: x.siteId, selected: x.siteId === state.siteId }, x.name); }));
  var per = h("select", { id: "period-picker", onchange: function () { state.period = per.value; render(); } },
    PERIODS.map(function (p) { return h("option", { value: p, selected: p === state.period }, t("period_" + p)); }));
  var row = h("div", { class: "row" }, h("label", { for: "site-picker" }, t("sitePicker"), sel), h("label", { for: "period-picker" }, t("periodPicker"), per));
  if (state.period === "custom") {
    var from = h("input", { id: "custom-from", type: "date", value: state.customFrom });
    var to = h("input", { id: "custom-to", type: "date", value: state.customTo });
    add(row, h("label", { for: "custom-from" }, t("customFrom"), from), h("label", { for: "custom-to" }, t("customTo"), to),
      h("button", { id: "custom-apply", onclick: function () { state.customFrom = from.value; state.customTo = to.value; render(); } }, t("apply")));
  }
  // Several clients of different zones: the operator picks the zone.
  if (!state.siteId && zones().length > 1) {
    var zs = h("select", { id: "zone-picker", onchange: function () { state.zone = zs.value; render(); } },
      zones().map(function (z) { return h("option", { value: z, selected: z === zone() }, z); }));
    add(row, h("label", { for: "zone-picker" }, t("zonePicker"), zs));
  }
  return row;
}

export function visitsScreen(main) {
  var body = h("div", { id: "visits-body" }, h("p", {}, t("loading")));
  add(main, h("h2", {}, t("navVisits")), periodPicker(), filterBar(), body);
  if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
  var ids = siteIds(), p = period(), z = zone();
  var args = withFilters({ siteIds: ids, from: p.from, to: p.to, interval: p.interval, timezone: z, compare: "previousPeriod" });
  Promise.all([
    api("POST", "/dashboard/api/analytics/overview", args),
    api("POST", "/dashboard/api/analytics/live", withFilters({ siteIds: ids, limit: 20 })),
  ]).then(function (res) {
    var o = res[0], live = res[1], tt = o.totals, ch = o.change || {};
    function card(key, label, value, c) {
      return h("div", { class: "card", "data-k": key }, h("div", { class: "k" }, label), h("div", { class: "v" }, value), c);
    }
    function csv(table) { return csvButton("overview", table, args); }
    var hourly = o.interval === "hour";
    fill(body,
      h("p", { class: "muted", id: "visits-zone" }, t("visitsZone", { zone: o.timezone || z, from: date(p.from, false, z), to: date(p.to, false, z) })),
      h("section", { "aria-labelledby": "visits-summary-h" }, h("h3", { id: "visits-summary-h" }, t("visitsSummary")),
        h("div", { class: "cards" },
          card("visitors", t("visitors"), num(tt.visitors), change(ch.visitors)),
          card("sessions", t("sessions"), num(tt.sessions), change(ch.sessions)),
          card("pageviews", t("pageviews"), num(tt.pageviews), change(ch.pageviews)),
          card("bounceRate", t("bounceRate"), rate(tt.bounceRate), change(ch.bounceRate, true)),
          card("avgDuration", t("avgDuration"), duration(tt.avgDurationMs), change(ch.avgDurationMs)),
          card("viewsPerSession", t("viewsPerSession"), tt.viewsPerSession == null ? S.unknown : decFmt.format(tt.viewsPerSession), change(ch.viewsPerSession)),
          card("avgEngaged", t("avgEngaged"), duration(tt.avgEngagedMs), change(ch.avgEngagedMs)),
          card("live", t("liveNow"), num(live.count)),
          // Taps on the site's WhatsApp links (docs/whatsapp.md): the tracker's whatsapp_click events.
          card("whatsappClicks", t("whatsappClicks"), num((o.events.filter(function (e) { return e.name === "whatsapp_click"; })[0] || { count: 0 }).count))),
        h("p", { class: "muted" }, t("comparedWith", { from: date(o.comparison.from, false, z), to: date(o.comparison.to, false, z) }))),
      h("section", {}, h("div", { class: "row between" }, h("h3", { id: "visits-chart-h" }, t(hourly ? "visitsChartHourly" : "visitsChart")), csv("series")), visitsChart(o, z, hourly)),
      h("div", { class: "panels" }, panels(o, args)),
      liveTable(live, ids),
      sessionsSection(state.siteId, p),
      coverage(ids, p, z),
      h("p", { class: "muted" }, t("visitsNote")));
    follow(ids, body);
  }).catch(function (e) { say(body, explain(e)); });
}

function liveTable(live, ids) {
  function timeline(v) {
    return h("button", { class: "link", "data-timeline": v.visitorId, onclick: function () { visitorDialog(v.siteId, v.visitorId, recent()); } }, t("timeline"));
  }
  var section = grid("live-visitors", t("liveTitle"), [t("page"), t("entryPage"), t("source"), t("liveWho"), t("liveIntent"), t("lastSeen"), ""],
    live.visitors.map(function (v) {
      var where = [v.device ? t("device_" + v.device) : null, v.country].filter(Boolean).join(" · ") || S.unknown;
      var who = v.profile && (v.profile.name || v.profile.email) ? v.profile.name || v.profile.email : t(v.returning ? "liveReturning" : "liveNew");
      return [v.currentPath, v.entryPath, v.campaign ? v.source + " · " + v.campaign : v.source, who + " · " + where, intent(v), date(v.lastSeenAt, true), timeline(v)];
    }), t("noVisits"),
    { csv: csvButton("liveVisitors", "visitors", withFilters({ siteIds: ids, now: state.me.now })) });
  section.id = "live-section";
  return section;
}

// What the period's figures stand on (dataCoverage), per client: since when
// it is tracked, and for each kind of row whether the period is complete,
// partly kept, counted only by the rollups (rows deleted by retention) or
// not there at all.
var CLASSES = ["aggregates", "sessions", "events", "conversions", "siteMap"];
function coverage(ids, p, z) {
  var tbody = h("tbody", {});
  var box = h("section", { id: "coverage" }, h("h3", {}, t("coverageTitle")),
    h("table", { id: "coverage-table" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("client")), h("th", { scope: "col" }, t("trackingSince")),
      CLASSES.map(function (c) { return h("th", { scope: "col" }, t("class_" + c)); }))), tbody),
    h("p", { class: "muted" }, t("coverageNote")));
  ids.forEach(function (id) {
    api("POST", "/dashboard/api/fn/dataCoverage", { siteId: id, from: p.from, to: p.to, timezone: z }).then(function (c) {
      var name = (state.sites.filter(function (x) { return x.siteId === id; })[0] || {}).name || id;
      add(tbody, h("tr", { "data-site": id }, h("th", { scope: "row" }, name), h("td", {}, date(c.trackingSince, false, z)),
        CLASSES.map(function (k) {
          var cl = c.classes[k];
          var since = cl.status === "partial" && cl.coveredFrom != null ? " " + t("coveredFrom", { date: date(cl.coveredFrom, false, z) }) : "";
          return h("td", { "data-class": k, "data-status": cl.status }, t("coverage_" + cl.status) + since);
        })));
    }).catch(function (e) { say(box, explain(e)); });
  });
  return box;
}

// What a live visitor is doing for the business: its affiliate, goals
// reached, furthest funnel step and conversions this session.
function intent(v) {
  var parts = [];
  if (v.affiliate) parts.push(t("liveAffiliate", { slug: v.affiliate.slug }));
  if (v.goals && v.goals.length) parts.push(t("liveGoals", { goals: v.goals.join(", ") }));
  if (v.funnel) parts.push(t("liveFunnel", { funnel: v.funnel.key, step: v.funnel.step, steps: v.funnel.steps }));
  if (v.conversions) parts.push(t("liveConversions", { n: num(v.conversions) }));
  if (v.lead) parts.push(t("liveLead"));
  return h("span", { "data-intent": v.visitorId }, parts.length ? parts.join(" · ") : "—");
}

// "Agora no site" and the live list follow the sites' live states the daemon
// pushes (Server-Sent Events) instead of polling: each event is one site's
// state; the screen shows their sum and the latest rows. Under filters an
// event only says something changed, and the filtered list is read again.
function follow(ids, body) {
  var latest = {};
  var stream = new EventSource("/dashboard/api/live/stream?siteIds=" + encodeURIComponent(ids.join(",")));
  state.stream = stream;
  stream.addEventListener("live", function (ev) {
    var site = JSON.parse(ev.data);
    latest[site.siteId] = site;
    var shown = state.filters.length
      ? api("POST", "/dashboard/api/analytics/live", withFilters({ siteIds: ids, limit: 20 }))
      : Promise.resolve(merged(latest));
    shown.then(function (live) {
      var card = body.querySelector("[data-k=live] .v"), old = body.querySelector("#live-section");
      if (card) card.textContent = num(live.count);
      if (old) old.replaceWith(liveTable(live, ids));
    }).catch(function () {});
  });
}

// The sites' states as one: the visitors in all, the 20 seen last.
function merged(latest) {
  var count = 0, rows = [];
  Object.keys(latest).forEach(function (k) { count += latest[k].count; rows = rows.concat(latest[k].visitors); });
  rows.sort(function (a, b) { return b.lastSeenAt - a.lastSeenAt; });
  return { count: count, visitors: rows.slice(0, 20) };
}

// Pageviews per bucket as bars, the period before as a dashed line over them.
function visitsChart(o, z, hourly) {
  function when(ms) { return hourly ? new Intl.DateTimeFormat(S.locale, { timeZone: z, hour: "2-digit", minute: "2-digit" }).format(new Date(ms)) : date(ms, false, z); }
  var before = (o.comparison && o.comparison.series) || [];
  return chart({
    id: "visits-chart", labelledBy: "visits-chart-h",
    describe: t("visitsChartLabel", { pageviews: num(o.totals.pageviews), n: o.series.length }),
    points: o.series.map(function (b, i) { return { label: when(b.bucketStart), bar: b.pageviews, before: before[i] ? before[i].pageviews : null }; }),
    bar: { name: t("pageviews"), fmt: num },
    before: before.length ? { name: t("previousPeriod") } : null,
  });
}
