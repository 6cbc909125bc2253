// ---- site map (one client at a time) --------------------------------------
import { state, site, localDays, oneSite, render } from "./state.js";
import { t, h, add, num, date, say, fill, grid, pickers, filterBar, withFilters } from "./dom.js";
import { api, explain, csvButton } from "./api.js";

export function siteMapScreen(main) {
  var body = h("div", { id: "sitemap-body" }, h("p", {}, t("loading")));
  add(main, h("h2", {}, t("navSiteMap")), pickers(function () { render(); }), filterBar(t("filtersOnSiteMap")), body);
  if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
  var r = localDays(), id = oneSite();
  var args = withFilters({ siteIds: [id], from: r.from, to: r.to, timezone: r.zone });
  api("POST", "/dashboard/api/analytics/site-map", args).then(function (m) {
    var sm = m.sites[0];
    fill(body,
      h("p", { class: "muted", id: "sitemap-coverage" }, t("siteMapCoverage", { site: (site(id) || {}).name || id, date: date(sm.coverageFrom, false, "UTC") })),
      sm.regrouping ? h("p", { class: "alert" }, t("siteMapRegrouping")) : null,
      sm.truncated ? h("p", { class: "alert" }, t("siteMapTruncated")) : null,
      grid("sitemap-routes", t("siteMapRoutes"), [t("page"), t("pageviews"), t("entries"), t("exits"), t("bounces")],
        sm.routes.map(function (x) { return [x.route, num(x.views), num(x.entries), num(x.exits), num(x.bounces)]; }), t("noVisits"),
        { dim: "page", csv: csvButton("siteMap", "routes", args) }),
      grid("sitemap-transitions", t("siteMapTransitions"), [t("fromPage"), t("toPage"), t("count")],
        sm.transitions.slice(0, 50).map(function (x) { return [x.from, x.to, num(x.count)]; }), t("noVisits"),
        { csv: csvButton("siteMap", "transitions", args) }),
      h("p", { class: "muted" }, t("siteMapNote")));
  }).catch(function (e) { say(body, explain(e)); });
}
