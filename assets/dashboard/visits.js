// ---- visits (web analytics) ----------------------------------------------
import { DAY, state, siteIds, render } from "./state.js";
import { S, t, h, add, num, date, say, fill, rate, duration, s, pickers } from "./dom.js";
import { api, explain } from "./api.js";

export function visitsScreen(main) {
  var body = h("div", { id: "visits-body" }, h("p", {}, t("loading")));
  add(main, h("h2", {}, t("navVisits")), pickers(function () { render(); }), body);
  if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
  // Whole UTC days up to the end of today: the overview counts today so far too.
  var today = Math.floor(state.me.now / DAY) * DAY, ids = siteIds();
  var r = { from: today - (state.days - 1) * DAY, to: today + DAY - 1 };
  Promise.all([
    api("POST", "/dashboard/api/analytics/overview", { siteIds: ids, from: r.from, to: r.to }),
    api("POST", "/dashboard/api/analytics/live", { siteIds: ids, limit: 20 }),
  ]).then(function (res) {
    var o = res[0], live = res[1], tt = o.totals;
    function card(key, label, value) {
      return h("div", { class: "card", "data-k": key }, h("div", { class: "k" }, label), h("div", { class: "v" }, value));
    }
    function table(id, title, head, rows) {
      return h("section", {}, h("h3", {}, title), rows.length
        ? h("table", { id: id }, h("thead", {}, h("tr", {}, head.map(function (c, i) { return h("th", { scope: "col", class: i ? "n" : null }, c); }))),
            h("tbody", {}, rows.map(function (row) { return h("tr", {}, row.map(function (c, i) { return i ? h("td", { class: "n" }, c) : h("th", { scope: "row" }, c); })); })))
        : h("p", {}, t("noVisits")));
    }
    var W = 720, H = 180, P = 28, n = o.series.length || 1, bw = (W - 2 * P) / n;
    var max = Math.max(1, Math.max.apply(null, o.series.map(function (b) { return b.pageviews; })));
    var svg = s("svg", { class: "chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": "visits-chart-h" });
    svg.appendChild(s("line", { x1: P, y1: H - P, x2: W - P, y2: H - P, stroke: "#8c959f" }));
    o.series.forEach(function (b, i) {
      var bh = (H - 2 * P) * b.pageviews / max;
      svg.appendChild(s("rect", { x: P + i * bw + 1, y: H - P - bh, width: Math.max(1, bw - 2), height: bh, fill: "#54aeff" },
        s("title", {}, date(b.bucketStart, false, "UTC") + ": " + num(b.pageviews) + " " + t("pageviews").toLowerCase())));
    });
    fill(body,
      h("section", { "aria-labelledby": "visits-summary-h" }, h("h3", { id: "visits-summary-h" }, t("visitsSummary")),
        h("div", { class: "cards" },
          card("visitors", t("visitors"), num(tt.visitors)),
          card("sessions", t("sessions"), num(tt.sessions)),
          card("pageviews", t("pageviews"), num(tt.pageviews)),
          card("bounceRate", t("bounceRate"), rate(tt.bounceRate)),
          card("avgDuration", t("avgDuration"), duration(tt.avgDurationMs)),
          card("live", t("liveNow"), num(live.count)))),
      h("section", {}, h("h3", { id: "visits-chart-h" }, t("visitsChart")), svg),
      table("top-pages", t("topPages"), [t("page"), t("pageviews"), t("visitors")],
        o.pages.map(function (p) { return [p.route, num(p.pageviews), num(p.visitors)]; })),
      table("top-sources", t("topSources"), [t("source"), t("sessions"), t("visitors")],
        o.sources.map(function (x) { return [x.source, num(x.sessions), num(x.visitors)]; })),
      table("live-visitors", t("liveTitle"), [t("page"), t("source"), t("device"), t("lastSeen")],
        live.visitors.map(function (v) { return [v.currentPath, v.source, v.device ? t("device_" + v.device) : S.unknown, date(v.lastSeenAt, true)]; })),
      h("p", { class: "muted" }, t("visitsNote")));
  }).catch(function (e) { say(body, explain(e)); });
}
