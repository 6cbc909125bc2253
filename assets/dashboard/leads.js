// ---- leads and spend -----------------------------------------------------
import { DAY, state, site, range, siteIds, render, zone } from "./state.js";
import { S, t, h, add, num, date, say, fill, dialog, pickers, filterBar, addFilter, withFilters, change, money } from "./dom.js";
import { chart } from "./chart.js";
import { api, explain, csvButton, leadsCsvButton } from "./api.js";

function band(fmt) {
  return fmt.band ? h("span", { class: "band band-" + fmt.band }, t("band_" + fmt.band)) : null;
}

export function leadsScreen(main) {
  var body = h("div", { id: "leads-body" }, h("p", {}, t("loading")));
  add(main, h("h2", {}, t("navLeads")), pickers(function () { render(); }), filterBar(t("filtersOnLeads"), "leadFilters"), body);
  if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noLeads"))); return; }
  var r = range(), ids = siteIds(), z = zone();
  var args = withFilters({ siteIds: ids, from: r.from, to: r.to, timezone: z }, "leadFilters");
  var dailyArgs = withFilters({ siteIds: ids, from: Math.max(r.from, r.to + 1 - 92 * DAY), to: r.to, timezone: z }, "leadFilters");
  // Each total beside the period before, and the chart with its line (REPORTING §2).
  var compared = function (a) { return Object.assign({}, a, { compare: "previousPeriod" }); };
  Promise.all([
    api("POST", "/dashboard/api/reports/leads", compared(args)),
    api("POST", "/dashboard/api/reports/leads-daily", compared(dailyArgs)),
  ]).then(function (res) {
    var report = res[0], daily = res[1];
    fill(body, h("p", { class: "muted", id: "leads-zone" }, t("leadsZone", { zone: z })),
      summary(report, args), clients(report, args), dailyChart(daily, report, z, dailyArgs), paidVsOrganic(report), origins(report, args),
      campaigns(report, args, r), leadList(ids, r, null, "lead-list"));
  }).catch(function (e) { say(body, explain(e)); });
}

// ---- the agency's clients, side by side (every client shown) ----
// Sortable by any figure (the order only: each figure on screen is the
// server's); a client's name opens that client.
var sortBy = { key: "leads", desc: true };
var SORTS = {
  name: function (r) { return ((site(r.siteId) || {}).name || r.siteId).toLowerCase(); },
  leads: function (r) { return r.leads; },
  qualified: function (r) { return r.qualified; },
  won: function (r) { return r.won; },
  spend: function (r) { return r.spendCents == null ? -1 : r.spendCents; },
  costPerLead: function (r) { return r.spendCents == null || !r.paid.leads ? Infinity : r.spendCents / r.paid.leads; },
  returnOnSpend: function (r) { return r.spendCents ? r.paid.revenueCents / r.spendCents : -1; },
};
function clients(report, args) {
  if (state.siteId || (report.bySite || []).length < 2) return null;
  var box = h("section", { id: "clients-section" });
  function draw() {
    var key = SORTS[sortBy.key];
    var rows = report.bySite.slice().sort(function (a, b) {
      var x = key(a), y = key(b), c = x < y ? -1 : x > y ? 1 : 0;
      return sortBy.desc ? -c : c;
    });
    function head(k, label) {
      var on = sortBy.key === k;
      return h("th", { scope: "col", class: k === "name" ? null : "n", "aria-sort": on ? (sortBy.desc ? "descending" : "ascending") : null },
        h("button", { class: "link", "data-sort": k, onclick: function () { sortBy = { key: k, desc: on ? !sortBy.desc : k !== "name" && k !== "costPerLead" }; draw(); } }, label));
    }
    box.replaceChildren(heading(null, t("clientsTitle"), csvButton("leadsReport", "sites", args)),
      h("table", { id: "by-site" }, h("thead", {}, h("tr", {}, head("name", t("client")), head("leads", t("leads")), head("qualified", t("qualified")),
        head("won", t("sales")), head("spend", t("spend")), head("costPerLead", t("costPerLead")), head("returnOnSpend", t("returnOnSpend")))),
      h("tbody", {}, rows.map(function (r) {
        return h("tr", { "data-site": r.siteId },
          h("th", { scope: "row" }, h("button", { class: "link", "data-open-site": r.siteId, onclick: function () { state.siteId = r.siteId; render(); } }, (site(r.siteId) || {}).name || r.siteId)),
          h("td", { class: "n", "data-col": "leads" }, num(r.leads)), h("td", { class: "n", "data-col": "qualified" }, num(r.qualified)),
          h("td", { class: "n", "data-col": "won" }, num(r.won)), h("td", { class: "n", "data-col": "spend" }, r.fmt.spend),
          h("td", { class: "n", "data-col": "costPerLead" }, r.paidFmt.costPerLead),
          h("td", { class: "n", "data-col": "returnOnSpend" }, r.paidFmt.returnOnSpend, band(r.paidFmt)));
      }))),
      h("p", { class: "muted" }, t("clientsNote")));
  }
  draw();
  return box;
}

// A heading with its "Baixar CSV".
function heading(id, title, csv) { return h("div", { class: "row between" }, h("h3", { id: id }, title), csv); }

// A row's first cell: its name, a button making it the dimension's filter.
function filterCell(tag, dim, value, name) {
  if (value == null) return h(tag, tag === "th" ? { scope: "row" } : {}, name);
  return h(tag, tag === "th" ? { scope: "row" } : {}, h("button", { class: "link", "data-add-filter": dim, title: t("addFilter"),
    onclick: function () { addFilter(dim, value, "leadFilters", name); } }, name));
}

function summary(report, args) {
  // Costs and the return come from what the spend bought (METRIC-03: the paid
  // origins, WhatsApp ads and instant forms together); the rest from the totals.
  var pf = report.paidFmt || { costPerLead: S.unknown, costPerSale: S.unknown, returnOnSpend: S.unknown };
  var tt = report.totals, ch = report.change || {};
  function card(key, label, value, extra, c) {
    return h("div", { class: "card", "data-k": key }, h("div", { class: "k" }, label), h("div", { class: "v" }, value, extra || null), c || null);
  }
  return h("section", { "aria-labelledby": "summary-h" },
    heading("summary-h", t("summaryTitle"), csvButton("leadsReport", "totals", args)),
    report.currencyMismatch ? h("p", { class: "alert" }, t("currencyMismatch")) : null,
    report.spendIncomplete ? h("p", { class: "alert" }, t("spendIncomplete")) : null,
    h("div", { class: "cards" },
      card("leads", t("leads"), num(tt.leads), null, change(ch.leads)),
      card("qualified", t("qualified"), num(tt.qualified), null, change(ch.qualified)),
      card("won", t("sales"), num(tt.won), null, change(ch.won)),
      card("revenue", t("revenue"), tt.fmt.revenue, null, change(ch.revenueCents)),
      card("spend", t("spend"), tt.fmt.spend, null, change(ch.spendCents, false, true)),
      card("costPerLead", t("costPerLead"), pf.costPerLead),
      card("costPerSale", t("costPerSale"), pf.costPerSale),
      card("returnOnSpend", t("returnOnSpend"), pf.returnOnSpend, band(pf))),
    report.comparison ? h("p", { class: "muted", id: "leads-compared" }, t("comparedWith", { from: date(report.comparison.from, false, zone()), to: date(report.comparison.to, false, zone()) })) : null,
    h("p", { class: "muted" }, t("summaryNote")));
}

// Bars for leads, a line for spend (each on its own axis), the period
// before's leads dashed. `id`: the chart's own (the ad dialog draws one too).
export function leadsChart(daily, report, z, id, labelledBy) {
  var cur = report.spendCurrency || report.currency || "BRL";
  var spend = function (c) { return c == null ? S.unknown : money(c, cur); };
  return chart({
    id: id, labelledBy: labelledBy,
    describe: t("chartLabel", { leads: num(report.totals.leads), spend: report.totals.fmt.spend }),
    points: daily.map(function (d) { return { label: date(d.dayStart, false, z), bar: d.leads, line: d.spendCents, before: d.comparison ? d.comparison.leads : null }; }),
    bar: { name: t("leads"), fmt: num },
    line: { name: t("spend"), fmt: spend, axis: function (c) { return money(c, cur).replace(/[,.]00$/, ""); } },
    before: daily.some(function (d) { return d.comparison; }) ? { name: t("previousPeriod") } : null,
  });
}
function legend() {
  return h("div", { class: "legend" }, h("span", {}, h("span", { class: "sw", "data-c": "leads" }), t("leads")), h("span", {}, h("span", { class: "sw", "data-c": "spend" }), t("spend")),
    h("span", {}, h("span", { class: "sw", "data-c": "before" }), t("previousPeriod")));
}
function dailyChart(daily, report, z, args) {
  return h("section", {}, heading("chart-h", t("chartTitle"), csvButton("leadsDaily", "days", args)), leadsChart(daily, report, z, "leads-chart", "chart-h"), legend());
}

function figures(row) {
  var f = row.fmt;
  return [
    h("td", { class: "n", "data-col": "leads" }, num(row.leads)),
    h("td", { class: "n", "data-col": "qualified" }, num(row.qualified)),
    h("td", { class: "n", "data-col": "won" }, num(row.won)),
    h("td", { class: "n", "data-col": "revenue" }, f.revenue),
    h("td", { class: "n", "data-col": "spend" }, f.spend),
    h("td", { class: "n", "data-col": "costPerLead" }, f.costPerLead),
    h("td", { class: "n", "data-col": "costPerQualified" }, f.costPerQualified),
    h("td", { class: "n", "data-col": "costPerSale" }, f.costPerSale),
    h("td", { class: "n", "data-col": "returnOnSpend" }, f.returnOnSpend, band(f)),
  ];
}
// Each origin's figures: the paid ones (WhatsApp ads and instant forms) with their own spend.
function originLabel(o) { var k = "origin_" + o; var v = t(k); return v === k ? o : v; }
function origins(report, args) {
  var rows = (report.origins || []).map(function (o) {
    return h("tr", { "data-origin": o.origin }, filterCell("th", "origin", o.origin, originLabel(o.origin)), figures(o));
  });
  var head = h("tr", {}, h("th", { scope: "col" }, t("origin")),
    ["leads", "qualified", "sales", "revenue", "spend", "costPerLead", "costPerQualified", "costPerSale", "returnOnSpend"].map(function (k) { return h("th", { scope: "col", class: "n" }, t(k)); }));
  return rows.length ? h("section", {}, heading(null, t("originsTitle"), csvButton("leadsReport", "origins", args)),
    h("table", { id: "origins" }, h("thead", {}, head), h("tbody", {}, rows))) : null;
}

// "Retorno total": the leads' revenue plus the site's own sales of the ads'
// visits over the spend (WA-21), written out by the server; the site's sales
// themselves in its title.
function totalReturn(row) {
  var title = row.siteConversions ? t("siteSales", { n: num(row.siteConversions) }) : null;
  return h("td", { class: "n", "data-col": "totalReturn", title: title }, row.fmt.totalReturn || S.unknown);
}

// Meta's delivery beside the campaign tree's figures (the server writes them out).
var DELIVERY = ["impressions", "clicks", "ctr", "cpc", "cpm"];
function delivered(row) {
  var d = row.fmt.delivery || {};
  return DELIVERY.map(function (k) { return h("td", { class: "n", "data-col": k }, d[k] || S.unknown); });
}

function campaigns(report, args, r) {
  var rows = [];
  (report.campaigns || []).forEach(function (c) {
    rows.push(h("tr", { class: "lvl0", "data-campaign": c.campaignId || "" }, filterCell("th", "campaign", c.campaignId, c.name || c.campaignId || t("noCampaign")), figures(c), totalReturn(c), delivered(c)));
    (c.adsets || []).forEach(function (a) {
      rows.push(h("tr", { class: "lvl1", "data-adset": a.adsetId || "" }, filterCell("td", "adSet", a.adsetId, a.name || a.adsetId || t("noName")), figures(a), totalReturn(a), delivered(a)));
      (a.ads || []).forEach(function (ad) {
        var img = ad.thumbnailUrl ? h("img", { class: "thumb", src: ad.thumbnailUrl, alt: "", loading: "lazy" }) : null;
        var cell = filterCell("td", "ad", ad.adId, ad.name || ad.adId);
        if (img) cell.prepend(img);
        add(cell, " ", h("button", { class: "link", "data-open-ad": ad.adId, "aria-label": t("seeAdOf", { ad: ad.name || ad.adId }), onclick: function () { adDialog(ad, report, r); } }, t("seeAd")));
        rows.push(h("tr", { class: "lvl2", "data-ad": ad.adId }, cell, figures(ad), totalReturn(ad), delivered(ad)));
      });
    });
  });
  var head = h("tr", {}, h("th", { scope: "col" }, t("campaignCol")),
    ["leads", "qualified", "sales", "revenue", "spend", "costPerLead", "costPerQualified", "costPerSale", "returnOnSpend", "totalReturn"].concat(DELIVERY).map(function (k) { return h("th", { scope: "col", class: "n" }, t(k)); }));
  return h("section", {}, heading(null, t("campaignsTitle"), csvButton("leadsReport", "ads", args)),
    rows.length ? h("table", { id: "campaigns" }, h("thead", {}, head), h("tbody", {}, rows)) : h("p", {}, t("noAds")));
}

// The leads, 25 at a time, newest first: the screen's (under its filters), or
// one ad's (`adId`, in the ad's dialog).
function leadList(ids, r, adId, id) {
  var filters = !adId && state.leadFilters.length ? "&filters=" + encodeURIComponent(JSON.stringify(state.leadFilters)) : "";
  if (adId) filters += "&adId=" + encodeURIComponent(adId);
  var csvQuery = "from=" + r.from + "&to=" + r.to + "&timezone=" + encodeURIComponent(zone()) + filters;
  // The file is one client's: with every client shown, no button.
  var csv = ids.length === 1 && !adId ? leadsCsvButton(ids[0], csvQuery) : null;
  var box = h("section", { id: id }, heading(null, t(adId ? "adLeadsTitle" : "leadsTitle"), csv));
  var tbody = h("tbody", {});
  var more = h("button", { id: adId ? "more-ad-leads" : "more-leads" }, t("moreLeads"));
  var last = null;
  function load() {
    var q = "siteIds=" + encodeURIComponent(ids.join(",")) + "&from=" + r.from + "&to=" + r.to + "&limit=25" + filters;
    if (last) q += "&before=" + last.firstAt + "&beforeLeadId=" + encodeURIComponent(last.leadId);
    api("GET", "/dashboard/api/leads?" + q).then(function (leads) {
      leads.forEach(function (l) {
        tbody.appendChild(h("tr", { "data-lead": l.leadId },
          h("td", {}, l.label || S.unknown), h("td", { "data-col": "channel" }, t("channel_" + (l.channel || "whatsapp"))),
          h("td", {}, originLabel(l.origin)), h("td", {}, l.adName || l.adId || S.unknown),
          h("td", {}, date(l.firstAt, true, (site(l.siteId) || {}).timezone)), h("td", {}, t("stage_" + l.stage)),
          h("td", {}, h("button", { onclick: function () { journey(l); } }, t("seeJourney")))));
      });
      if (leads.length) last = leads[leads.length - 1];
      more.hidden = leads.length < 25;
      if (!tbody.children.length) tbody.appendChild(h("tr", {}, h("td", { colspan: 7 }, t("noLeads"))));
    }).catch(function (e) { say(box, explain(e)); });
  }
  more.addEventListener("click", load);
  add(box, h("table", {}, h("thead", {}, h("tr", {}, [t("leadLabel"), t("channel"), t("origin"), t("ad"), t("arrivedAt"), t("stage"), t("journey")].map(function (x) { return h("th", { scope: "col" }, x); }))), tbody), more);
  load();
  return box;
}

function journey(l) {
  var tz0 = (site(l.siteId) || {}).timezone;
  api("GET", "/dashboard/api/sites/" + encodeURIComponent(l.siteId) + "/leads/" + encodeURIComponent(l.leadId) + "/journey").then(function (j) {
    var ad = j.ad ? h("p", {}, [j.ad.campaignName, j.ad.adsetName, j.ad.adName].filter(Boolean).join(" → ")) : null;
    var rows = j.history.map(function (e) {
      return h("tr", {}, h("td", {}, date(e.occurredAt, true, tz0)), h("td", {}, e.stage ? t("stage_" + e.stage) : S.unknown),
        h("td", {}, e.column || S.unknown), h("td", { class: "n" }, e.revenue));
    });
    // The site visit whose WhatsApp tap became this lead (WA-14).
    var v = j.visit;
    var visit = v ? h("dl", { id: "lead-visit" },
      h("dt", {}, t("visitSource")), h("dd", {}, v.campaign ? v.source + " · " + v.campaign : v.source),
      h("dt", {}, t("visitLanding")), h("dd", {}, v.landingPage),
      h("dt", {}, t("visitClicked")), h("dd", {}, v.clickedPage + " · " + date(v.clickedAt, true, tz0))) : null;
    dialog(t("journeyTitle", { lead: l.label || l.leadId }), h("div", { id: "journey" }, ad, visit,
      h("table", {}, h("thead", {}, h("tr", {}, [t("when"), t("stage"), t("column"), t("value")].map(function (x) { return h("th", { scope: "col" }, x); }))), h("tbody", {}, rows))));
  });
}

// What the spend bought against what came on its own: the paid origins
// (WhatsApp ads and instant forms, METRIC-03) beside every other, as counts
// and each one's share of the leads.
function paidVsOrganic(report) {
  var paid = { leads: 0, qualified: 0, won: 0, revenueCents: 0 };
  (report.bySite || []).forEach(function (r) { ["leads", "qualified", "won", "revenueCents"].forEach(function (k) { paid[k] += r.paid[k]; }); });
  var tt = report.totals, cur = report.currency || "BRL";
  var organic = { leads: tt.leads - paid.leads, qualified: tt.qualified - paid.qualified, won: tt.won - paid.won, revenueCents: tt.revenueCents - paid.revenueCents };
  var share = function (n) { return tt.leads ? new Intl.NumberFormat(S.locale, { style: "percent", maximumFractionDigits: 0 }).format(n / tt.leads) : S.unknown; };
  function row(key, label, c) {
    return h("tr", { "data-kind": key }, h("th", { scope: "row" }, label), h("td", { class: "n", "data-col": "leads" }, num(c.leads)),
      h("td", { class: "n", "data-col": "share" }, share(c.leads), h("span", { class: "share", "aria-hidden": "true" }, h("span", { class: "share-" + key, "data-w": String(tt.leads ? Math.round(100 * c.leads / tt.leads) : 0) }))),
      h("td", { class: "n", "data-col": "qualified" }, num(c.qualified)), h("td", { class: "n", "data-col": "won" }, num(c.won)),
      h("td", { class: "n", "data-col": "revenue" }, money(c.revenueCents, cur)));
  }
  var table = h("table", { id: "paid-organic" }, h("thead", {}, h("tr", {}, [t("origin"), t("leads"), t("shareOfLeads"), t("qualified"), t("sales"), t("revenue")]
    .map(function (x, i) { return h("th", { scope: "col", class: i ? "n" : null }, x); }))),
    h("tbody", {}, row("paid", t("paidLeads"), paid), row("organic", t("organicLeads"), organic)));
  // The bars' widths from their data attribute (the CSP allows no inline style attribute).
  table.querySelectorAll("[data-w]").forEach(function (el) { el.style.width = el.getAttribute("data-w") + "%"; });
  return h("section", { id: "paid-organic-section" }, heading(null, t("paidVsOrganic"), null), table, h("p", { class: "muted" }, t("paidVsOrganicNote")));
}

// One ad: its figures, its own daily chart (leads and spend, from
// `leadsDaily` with its `adId`) and its leads (the lead list's `adId`).
function adDialog(ad, report, r) {
  var ids = siteIds(), z = zone();
  var args = { siteIds: ids, from: Math.max(r.from, r.to + 1 - 92 * DAY), to: r.to, timezone: z, adId: ad.adId };
  var box = h("div", { id: "ad-dialog" }, h("p", {}, t("loading")));
  dialog(t("adTitle", { ad: ad.name || ad.adId }), box);
  api("POST", "/dashboard/api/reports/leads-daily", args).then(function (daily) {
    var total = daily.reduce(function (n, d) { return n + d.leads; }, 0);
    var own = { currency: report.currency, spendCurrency: report.spendCurrency, totals: { leads: total, fmt: { spend: ad.fmt.spend } } };
    var d = ad.fmt.delivery || {};
    fill(box,
      h("div", { class: "cards" }, [["leads", num(ad.leads)], ["spend", ad.fmt.spend], ["costPerLead", ad.fmt.costPerLead], ["returnOnSpend", ad.fmt.returnOnSpend],
        ["impressions", d.impressions || S.unknown], ["ctr", d.ctr || S.unknown], ["cpc", d.cpc || S.unknown], ["cpm", d.cpm || S.unknown]].map(function (c) {
        return h("div", { class: "card", "data-k": c[0] }, h("div", { class: "k" }, t(c[0])), h("div", { class: "v" }, c[1]));
      })),
      h("h3", { id: "ad-chart-h" }, t("adChartTitle")), leadsChart(daily, own, z, "ad-chart", "ad-chart-h"), legend(),
      leadList(ids, r, ad.adId, "ad-leads"));
  }).catch(function (e) { say(box, explain(e)); });
}
