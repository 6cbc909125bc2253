// ---- goals, funnels, revenue and their definitions (one client at a time) --
import { state, site, canWrite, localDays, oneSite, render } from "./state.js";
import { t, h, add, num, date, say, fill, rate, grid, money, pickers, filterBar, withFilters, change } from "./dom.js";
import { explain, fn, csvButton } from "./api.js";

function matcherText(m) { return m.kind === "event" ? t("matcherEvent", { name: m.name }) : t("matcherPage", { path: m.path }); }

export function goalsScreen(main) {
  var body = h("div", { id: "goals-body" }, h("p", {}, t("loading")));
  add(main, h("h2", {}, t("navGoals")), pickers(function () { render(); }), filterBar(t("filtersOnGoals")), body);
  if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
  var r = localDays(), id = oneSite(), args = { siteId: id, from: r.from, to: r.to, timezone: r.zone };
  var filtered = withFilters(args);
  var convArgs = { siteId: id, from: r.from, to: r.to, paginationOpts: { numItems: 20, cursor: null } };
  Promise.all([
    fn("goalsReport", filtered), fn("funnelsReport", filtered), fn("revenueSummary", { siteIds: [id], from: r.from, to: r.to, timezone: r.zone, compare: "previousPeriod" }),
    fn("affiliatesReport", args), fn("listConversions", convArgs),
  ]).then(function (res) {
    var goals = res[0], funnels = res[1], rev = res[2], aff = res[3], conv = res[4], cur = rev.currency;
    var rch = rev.change || {};
    function card(key, label, value, field) { return h("div", { class: "card", "data-k": key }, h("div", { class: "k" }, label), h("div", { class: "v" }, value), change(rch[field])); }
    fill(body,
      h("p", { class: "muted" }, t("goalsFor", { site: (site(id) || {}).name || id, zone: r.zone })),
      h("section", {}, h("h3", {}, t("revenueTitle")), h("div", { class: "cards", id: "revenue-cards" },
        card("conversions", t("conversionsCount"), num(rev.conversions), "conversions"),
        card("revenue", t("revenue"), money(rev.revenueCents, cur), "revenueCents"),
        card("commission", t("commission"), money(rev.commissionCents, cur), "commissionCents"),
        card("net", t("netRevenue"), money(rev.netRevenueCents, cur), "netRevenueCents"))),
      grid("goals-table", t("goalsTitle"), [t("goal"), t("completions"), t("sessions"), t("conversionRate"), t("goalValue")],
        goals.goals.map(function (g) { return [g.name + " (" + matcherText(g.matcher) + ")", num(g.completions), num(g.sessions), rate(g.conversionRate), money(g.valueTotalCents, cur)]; }), t("noGoals"),
        { dim: "goal", values: goals.goals.map(function (g) { return g.key; }), csv: csvButton("goalsReport", "goals", filtered) }),
      funnels.funnels.length ? funnels.funnels.map(function (f, i) {
        return grid("funnel-" + f.key, t("funnelTitle", { name: f.name, rate: rate(f.conversionRate) }), [t("step"), t("visitors"), t("dropoff"), t("conversionRate")],
          f.steps.map(function (st) { return [st.index + ". " + st.label, num(st.visitors), num(st.dropoff), rate(st.conversionRate)]; }), t("noVisits"),
          { csv: i === 0 ? csvButton("funnelsReport", "steps", filtered) : null });
      }) : h("section", {}, h("h3", {}, t("funnelsTitle")), h("p", {}, t("noFunnels"))),
      grid("affiliates-table", t("affiliatesTitle"), [t("affiliate"), t("sessions"), t("conversionsCount"), t("revenue"), t("commission")],
        aff.affiliates.map(function (a) { return [a.name + " (" + a.slug + ")", num(a.sessions), num(a.conversions), money(a.revenueCents, aff.currency), money(a.commissionCents, aff.currency)]; }), t("noAffiliates"),
        { csv: csvButton("affiliatesReport", "affiliates", args) }),
      grid("conversions-table", t("conversionsLedger"), [t("conversion"), t("when"), t("value"), t("affiliate")],
        conv.page.map(function (c) { return [c.name, date(c.occurredAt, true), money(c.valueCents, c.currency), c.affiliate ? c.affiliate.slug : "—"]; }), t("noConversionsYet"),
        { csv: csvButton("listConversions", "conversions", Object.assign({}, convArgs, { paginationOpts: { numItems: 100, cursor: null } })) }),
      canWrite() ? definitionsPanel(id) : null,
      h("p", { class: "muted" }, t("goalsNote")));
  }).catch(function (e) { say(body, explain(e)); });
}

// Goals, affiliates and the retention policy, for operators allowed to configure.
function definitionsPanel(id) {
  var msg = h("div", { "aria-live": "polite", id: "definitions-msg" });
  var box = h("section", { id: "definitions" }, h("h3", {}, t("definitionsTitle")), msg);
  function field(fid, label, attrs) { var i = h("input", Object.assign({ id: fid, name: fid }, attrs || {})); return [h("label", { for: fid }, label, i), i]; }
  var gKey = field("goal-key", t("goalKey"), { required: true, pattern: "[a-z0-9_-]{1,64}" });
  var gName = field("goal-name", t("goalName"), { required: true, maxlength: 100 });
  var gPath = field("goal-path", t("goalPath"), { placeholder: "/obrigado" });
  var gValue = field("goal-value", t("goalValueCents"), { type: "number", min: 0 });
  var goalForm = h("form", { id: "goal-form", onsubmit: function (ev) {
    ev.preventDefault();
    var p = gPath[1].value.trim(), m = p.charAt(0) === "/" ? { kind: "pageview", path: p } : { kind: "event", name: p };
    var a = { siteId: id, key: gKey[1].value.trim(), name: gName[1].value.trim(), matcher: m };
    if (gValue[1].value !== "") a.valueCents = Number(gValue[1].value);
    fn("upsertGoal", a).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
  } }, h("h4", {}, t("newGoal")), gKey[0], gName[0], gPath[0], gValue[0], h("button", { class: "primary", type: "submit", id: "goal-save" }, t("save")));
  var aSlug = field("aff-slug", t("affiliateSlug"), { required: true, pattern: "[a-z0-9][a-z0-9-]{0,63}" });
  var aName = field("aff-name", t("affiliateName"), { required: true, maxlength: 100 });
  var aBps = field("aff-bps", t("commissionBps"), { type: "number", min: 0, max: 10000, required: true });
  var aDays = field("aff-days", t("windowDays"), { type: "number", min: 1, max: 365, required: true, value: "30" });
  var affForm = h("form", { id: "affiliate-form", onsubmit: function (ev) {
    ev.preventDefault();
    fn("upsertAffiliate", { siteId: id, slug: aSlug[1].value.trim(), name: aName[1].value.trim(), commissionBps: Number(aBps[1].value), windowDays: Number(aDays[1].value) })
      .then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
  } }, h("h4", {}, t("newAffiliate")), aSlug[0], aName[0], aBps[0], aDays[0], h("button", { class: "primary", type: "submit", id: "affiliate-save" }, t("save")));
  var lists = h("div", {});
  var retention = h("div", { id: "retention" });
  var settings = h("div", { id: "site-settings" });
  add(box, lists, goalForm, affForm, retention, settings);
  fn("siteSettings", { siteId: id }).then(function (st) {
    var sName = field("set-name", t("goalName"), { required: true, maxlength: 200, value: st.name });
    var sDomains = field("set-domains", t("siteDomains"), { value: st.domains.join(", ") });
    var sRoutes = h("textarea", { id: "set-routes", name: "set-routes", rows: 4 }, st.routePatterns.join("\n"));
    fill(settings, h("h4", {}, t("siteSettingsTitle")),
      st.regrouping ? h("p", { class: "alert", id: "set-regrouping" }, t("siteMapRegrouping")) : null,
      h("form", { id: "settings-form", onsubmit: function (ev) {
        ev.preventDefault();
        var list = function (v, sep) { return v.split(sep).map(function (x) { return x.trim(); }).filter(function (x) { return x; }); };
        fn("updateSite", { siteId: id, name: sName[1].value.trim(), domains: list(sDomains[1].value, ","), routePatterns: list(sRoutes.value, "\n") })
          .then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
      } }, sName[0], sDomains[0], h("label", { for: "set-routes" }, t("routePatterns"), sRoutes),
        h("button", { class: "primary", type: "submit", id: "settings-save" }, t("save"))));
  }).catch(function (e) { say(msg, explain(e)); });
  Promise.all([fn("listGoals", { siteId: id }), fn("listAffiliates", { siteId: id }), fn("retentionStatus", { siteId: id })]).then(function (res) {
    function remover(name, args) { return h("button", { onclick: function () { fn(name, args).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); }); } }, t("remove")); }
    fill(lists,
      grid("goal-defs", t("goalsDefined"), [t("goal"), t("matcher"), ""], res[0].map(function (g) { return [g.key, matcherText(g.matcher), remover("removeGoal", { siteId: id, goalId: g.goalId })]; }), t("noGoals")),
      grid("affiliate-defs", t("affiliatesDefined"), [t("affiliate"), t("commissionBps"), ""], res[1].map(function (a) { return [a.slug, num(a.commissionBps), remover("removeAffiliate", { siteId: id, affiliateId: a.affiliateId })]; }), t("noAffiliates")));
    var st = res[2], p = st.policy;
    var days = ["eventsDays", "sessionsDays", "conversionsDays", "profilesDays", "aggregatesDays"].map(function (k) {
      return field("ret-" + k, t("ret_" + k), { type: "number", min: 1, max: 3650, required: true, value: p ? String(p[k]) : "" });
    });
    fill(retention, h("h4", {}, t("retentionTitle")),
      h("p", { id: "retention-state" }, p ? t("retentionOn", { backlog: num(Object.keys(st.backlog).reduce(function (n, k) { return n + st.backlog[k]; }, 0)) }) : t("retentionOff")),
      h("form", { id: "retention-form", onsubmit: function (ev) {
        ev.preventDefault();
        var a = { siteId: id };
        ["eventsDays", "sessionsDays", "conversionsDays", "profilesDays", "aggregatesDays"].forEach(function (k, i) { a[k] = Number(days[i][1].value); });
        fn("setRetentionPolicy", a).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
      } }, days.map(function (d) { return d[0]; }), h("button", { class: "primary", type: "submit", id: "retention-save" }, t("save"))),
      p ? h("button", { id: "retention-off", onclick: function () { fn("disableRetentionPolicy", { siteId: id }).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); }); } }, t("retentionDisable")) : null);
  }).catch(function (e) { say(msg, explain(e)); });
  return box;
}
