// ---- vitals (one client at a time) -----------------------------------------
import { state, site, localDays, oneSite, render } from "./state.js";
import { S, t, h, add, decFmt, num, say, fill, grid, pickers, filterBar, withFilters } from "./dom.js";
import { api, explain, csvButton } from "./api.js";

export function vitalsScreen(main) {
  var body = h("div", { id: "vitals-body" }, h("p", {}, t("loading")));
  add(main, h("h2", {}, t("navVitals")), pickers(function () { render(); }), filterBar(), body);
  if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
  var r = localDays(), id = oneSite();
  var args = withFilters({ siteId: id, from: r.from, to: r.to, timezone: r.zone });
  api("POST", "/dashboard/api/analytics/vitals", args).then(function (v) {
    function p75(row) {
      if (row.p75 == null) return S.unknown;
      return row.metric === "cls" ? decFmt.format(row.p75) : num(row.p75) + " ms";
    }
    function rating(row) { return row.rating ? h("span", { class: "band band-" + row.rating }, t("rating_" + row.rating)) : S.unknown; }
    function cells(rows) { return rows.map(function (row) { return row.p75 == null ? S.unknown : h("span", { "data-m": row.metric }, p75(row), " ", rating(row)); }); }
    var names = v.metrics.map(function (row) { return t("metric_" + row.metric); });
    fill(body,
      h("p", { class: "muted" }, t("vitalsFor", { site: (site(id) || {}).name || id, zone: r.zone })),
      grid("vitals-metrics", t("vitalsMetrics"), [t("metric"), t("p75"), t("rating"), t("samples"), t("good"), t("needsImprovement"), t("poor")],
        v.metrics.map(function (row) { return [t("metric_" + row.metric), p75(row), rating(row), num(row.samples), num(row.good), num(row.needsImprovement), num(row.poor)]; }), t("noVitals"),
        { csv: csvButton("vitalsReport", "metrics", args) }),
      grid("vitals-pages", t("vitalsByPage"), [t("page"), t("samples")].concat(names),
        v.byPage.map(function (p) { return [p.route, num(p.samples)].concat(cells(p.metrics)); }), t("noVitals"),
        { dim: "page", csv: csvButton("vitalsReport", "pages", args) }),
      grid("vitals-devices", t("vitalsByDevice"), [t("device")].concat(names),
        v.byDevice.map(function (d) { return [d.device ? t("device_" + d.device) : S.unknown].concat(cells(d.metrics)); }), t("noVitals"),
        { dim: "device", values: v.byDevice.map(function (d) { return d.device; }), csv: csvButton("vitalsReport", "devices", args) }),
      h("p", { class: "muted" }, t("vitalsNote")));
  }).catch(function (e) { say(body, explain(e)); });
}
