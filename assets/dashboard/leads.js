// ---- leads and spend -----------------------------------------------------
import { DAY, state, site, range, siteIds, render, zone } from "./state.js";
import { S, t, h, add, num, date, say, fill, s, dialog, pickers, filterBar, addFilter, withFilters, change } from "./dom.js";
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
      summary(report, args), clients(report, args), chart(daily, report, z, dailyArgs), origins(report, args),
      campaigns(report, args), leadList(ids, r));
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

// Bars for leads, a line for spend, each on its own scale.
function chart(daily, report, z, args) {
  var W = 720, H = 220, P = 28, n = daily.length || 1, bw = (W - 2 * P) / n;
  var maxL = Math.max(1, Math.max.apply(null, daily.map(function (d) { return d.leads; })));
  var spends = daily.map(function (d) { return d.spendCents; });
  var maxS = Math.max(1, Math.max.apply(null, spends.map(function (x) { return x || 0; })));
  var svg = s("svg", { class: "chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": "chart-h chart-d" });
  svg.appendChild(s("desc", { id: "chart-d" }, t("chartLabel", { leads: num(report.totals.leads), spend: report.totals.fmt.spend })));
  svg.appendChild(s("line", { x1: P, y1: H - P, x2: W - P, y2: H - P, stroke: "#8c959f" }));
  daily.forEach(function (d, i) {
    var bh = (H - 2 * P) * d.leads / maxL;
    svg.appendChild(s("rect", { x: P + i * bw + 1, y: H - P - bh, width: Math.max(1, bw - 2), height: bh, fill: "#54aeff" }, s("title", {}, date(d.dayStart, false, z) + ": " + num(d.leads) + " " + t("leads").toLowerCase())));
  });
  var pts = [];
  daily.forEach(function (d, i) { if (d.spendCents != null) pts.push((P + i * bw + bw / 2).toFixed(1) + "," + (H - P - (H - 2 * P) * d.spendCents / maxS).toFixed(1)); });
  if (pts.length) svg.appendChild(s("polyline", { points: pts.join(" "), fill: "none", stroke: "#bc4c00", "stroke-width": 2 }));
  // The period before: its leads of the same position, dashed, on the bars' scale.
  var before = daily.map(function (d, i) { return d.comparison ? (P + i * bw + bw / 2).toFixed(1) + "," + (H - P - (H - 2 * P) * Math.min(d.comparison.leads, maxL) / maxL).toFixed(1) : null; }).filter(Boolean);
  if (before.length) svg.appendChild(s("polyline", { class: "compare", points: before.join(" "), fill: "none", stroke: "#57606a", "stroke-dasharray": "4 3", "stroke-width": 2 },
    s("title", {}, t("previousPeriod"))));
  if (daily.length) {
    svg.appendChild(s("text", { x: P, y: H - 8, "font-size": 11, fill: "#57606a" }, date(daily[0].dayStart, false, z)));
    svg.appendChild(s("text", { x: W - P, y: H - 8, "font-size": 11, fill: "#57606a", "text-anchor": "end" }, date(daily[daily.length - 1].dayStart, false, z)));
  }
  return h("section", {}, heading("chart-h", t("chartTitle"), csvButton("leadsDaily", "days", args)), svg,
    h("div", { class: "legend" }, h("span", {}, h("span", { class: "sw", "data-c": "leads" }), t("leads")), h("span", {}, h("span", { class: "sw", "data-c": "spend" }), t("spend")),
      h("span", {}, h("span", { class: "sw", "data-c": "before" }), t("previousPeriod"))));
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

// Meta's delivery beside the campaign tree's figures (the server writes them out).
var DELIVERY = ["impressions", "clicks", "ctr", "cpc", "cpm"];
function delivered(row) {
  var d = row.fmt.delivery || {};
  return DELIVERY.map(function (k) { return h("td", { class: "n", "data-col": k }, d[k] || S.unknown); });
}

function campaigns(report, args) {
  var rows = [];
  (report.campaigns || []).forEach(function (c) {
    rows.push(h("tr", { class: "lvl0", "data-campaign": c.campaignId || "" }, filterCell("th", "campaign", c.campaignId, c.name || c.campaignId || t("noCampaign")), figures(c), delivered(c)));
    (c.adsets || []).forEach(function (a) {
      rows.push(h("tr", { class: "lvl1", "data-adset": a.adsetId || "" }, filterCell("td", "adSet", a.adsetId, a.name || a.adsetId || t("noName")), figures(a), delivered(a)));
      (a.ads || []).forEach(function (ad) {
        var img = ad.thumbnailUrl ? h("img", { class: "thumb", src: ad.thumbnailUrl, alt: "", loading: "lazy" }) : null;
        var cell = filterCell("td", "ad", ad.adId, ad.name || ad.adId);
        if (img) cell.prepend(img);
        rows.push(h("tr", { class: "lvl2", "data-ad": ad.adId }, cell, figures(ad), delivered(ad)));
      });
    });
  });
  var head = h("tr", {}, h("th", { scope: "col" }, t("campaignCol")),
    ["leads", "qualified", "sales", "revenue", "spend", "costPerLead", "costPerQualified", "costPerSale", "returnOnSpend"].concat(DELIVERY).map(function (k) { return h("th", { scope: "col", class: "n" }, t(k)); }));
  return h("section", {}, heading(null, t("campaignsTitle"), csvButton("leadsReport", "ads", args)),
    rows.length ? h("table", { id: "campaigns" }, h("thead", {}, head), h("tbody", {}, rows)) : h("p", {}, t("noAds")));
}

function leadList(ids, r) {
  var filters = state.leadFilters.length ? "&filters=" + encodeURIComponent(JSON.stringify(state.leadFilters)) : "";
  var csvQuery = "from=" + r.from + "&to=" + r.to + "&timezone=" + encodeURIComponent(zone()) + filters;
  // The file is one client's: with every client shown, no button.
  var csv = ids.length === 1 ? leadsCsvButton(ids[0], csvQuery) : null;
  var box = h("section", { id: "lead-list" }, heading(null, t("leadsTitle"), csv));
  var tbody = h("tbody", {});
  var more = h("button", { id: "more-leads" }, t("moreLeads"));
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
    dialog(t("journeyTitle", { lead: l.label || l.leadId }), h("div", { id: "journey" }, ad,
      h("table", {}, h("thead", {}, h("tr", {}, [t("when"), t("stage"), t("column"), t("value")].map(function (x) { return h("th", { scope: "col" }, x); }))), h("tbody", {}, rows))));
  });
}
