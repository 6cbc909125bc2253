// ---- goals, funnels, revenue and their definitions (one client at a time) --
import { state, site, canWrite, localDays, oneSite, render } from "./state.js";
import { t, h, add, num, date, say, fill, rate, grid, money, pickers, filterBar, withFilters, change } from "./dom.js";
import { explain, fn, csvButton } from "./api.js";
import { definitionsPanel, matcherText } from "./definitions.js";


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
      conversionsSection(conv, convArgs),
      canWrite() ? definitionsPanel(id, r) : null,
      h("p", { class: "muted" }, t("goalsNote")));
  }).catch(function (e) { say(body, explain(e)); });
}


// The conversions, 20 at a time, newest first: "Mais conversões" reads the
// next page after the last one shown (the function's own cursor).
function conversionsSection(first, args) {
  var tbody = h("tbody", {});
  var more = h("button", { id: "more-conversions" }, t("moreConversions"));
  var box = h("section", { id: "conversions-section" });
  function show(page) {
    page.page.forEach(function (c) {
      add(tbody, h("tr", {}, h("th", { scope: "row" }, c.name), h("td", {}, date(c.occurredAt, true)),
        h("td", { class: "n" }, money(c.valueCents, c.currency)), h("td", {}, c.affiliate ? c.affiliate.slug : "—")));
    });
    more.hidden = page.isDone;
    more.onclick = function () {
      more.disabled = true;
      fn("listConversions", Object.assign({}, args, { paginationOpts: { numItems: 20, cursor: page.continueCursor } }))
        .then(function (next) { more.disabled = false; show(next); }).catch(function (e) { say(box, explain(e)); });
    };
  }
  var csv = csvButton("listConversions", "conversions", Object.assign({}, args, { paginationOpts: { numItems: 100, cursor: null } }));
  add(box, h("div", { class: "row between" }, h("h3", {}, t("conversionsLedger")), csv),
    first.page.length ? [h("table", { id: "conversions-table" }, h("thead", {}, h("tr", {},
      [t("conversion"), t("when"), t("value"), t("affiliate")].map(function (c, i) { return h("th", { scope: "col", class: i === 2 ? "n" : null }, c); }))), tbody), more]
      : h("p", {}, t("noConversionsYet")));
  show(first);
  return box;
}
