// ---- Visitas' breakdowns as tabs (as Plausible's panels) --------------------
// Four panels, each a row of tabs over one of the overview's tables: pages,
// sources, places and devices, events and goals. A row clicked becomes a
// filter; each table has its "Baixar CSV". Regions, operating systems and
// exit pages are no table of the overview: their tabs ask for its
// `breakdown` of that dimension when opened.
import { S, t, h, num, money, say, grid } from "./dom.js";
import { api, explain, csvButton } from "./api.js";

// A tab list over panels; the first tab open. `tabs`: [{key, label, draw}],
// `draw` answering a node or a promise of one.
function tabbed(id, title, tabs) {
  var panel = h("div", { role: "tabpanel", id: id + "-panel", tabindex: "0" });
  var buttons = tabs.map(function (tab, i) {
    return h("button", { role: "tab", id: id + "-tab-" + tab.key, "data-tab": tab.key, "aria-controls": id + "-panel",
      "aria-selected": i === 0 ? "true" : "false", tabindex: i === 0 ? "0" : "-1", onclick: function () { open(i); } }, tab.label);
  });
  function open(i) {
    buttons.forEach(function (b, j) { b.setAttribute("aria-selected", j === i ? "true" : "false"); b.setAttribute("tabindex", j === i ? "0" : "-1"); });
    panel.setAttribute("aria-labelledby", buttons[i].id);
    panel.replaceChildren(h("p", {}, t("loading")));
    Promise.resolve(tabs[i].draw()).then(function (node) { panel.replaceChildren(node); })
      .catch(function (e) { say(panel, explain(e)); });
  }
  // Arrow keys move between the tabs (the WAI-ARIA tabs pattern).
  var list = h("div", { role: "tablist", "aria-label": title, class: "tabs", onkeydown: function (ev) {
    var i = buttons.indexOf(document.activeElement);
    if (i < 0 || (ev.key !== "ArrowRight" && ev.key !== "ArrowLeft")) return;
    var j = (i + (ev.key === "ArrowRight" ? 1 : buttons.length - 1)) % buttons.length;
    buttons[j].focus();
    open(j);
  } }, buttons);
  var box = h("section", { class: "panel", id: id }, h("h3", {}, title), list, panel);
  open(0);
  return box;
}

// The overview's panels, for its arguments (`args`) and answer (`o`).
export function panels(o, args) {
  function csv(table) { return csvButton("overview", table, args); }
  function table(id, head, rows, empty, opts) { return grid(id, "", head, rows, empty || t("noVisits"), opts); }
  function device(d) { return d ? t("device_" + d) : S.unknown; }
  // A dimension the overview has no table for: its breakdown, asked when opened.
  function broken(id, dim, label, show) {
    var a = Object.assign({}, args, { breakdown: { dim: dim, limit: 10 } });
    delete a.compare;
    return api("POST", "/dashboard/api/analytics/overview", a).then(function (r) {
      var rows = r.breakdown.rows;
      return table(id, [label, t("visitors"), t("sessions")], rows.map(function (x) { return [show ? show(x.value) : x.value, num(x.visitors), num(x.sessions)]; }),
        null, { dim: dim, values: rows.map(function (x) { return x.value; }), csv: csvButton("overview", "breakdown", a) });
    });
  }
  var cur = o.currency;
  return [
    tabbed("panel-pages", t("panelPages"), [
      { key: "pages", label: t("topPages"), draw: function () {
        return table("top-pages", [t("page"), t("pageviews"), t("visitors")], o.pages.map(function (x) { return [x.route, num(x.pageviews), num(x.visitors)]; }),
          null, { dim: "page", csv: csv("pages") });
      } },
      { key: "entry", label: t("entryPages"), draw: function () {
        return table("entry-pages", [t("page"), t("sessions")], o.entryPages.map(function (x) { return [x.route, num(x.sessions)]; }),
          null, { dim: "entryPage", csv: csv("entryPages") });
      } },
      { key: "exit", label: t("exitPages"), draw: function () { return broken("exit-pages", "exitPage", t("page")); } },
    ]),
    tabbed("panel-sources", t("panelSources"), [
      { key: "sources", label: t("topSources"), draw: function () {
        // Leads: the WhatsApp taps of the source's visits that became leads (WA-16).
        return table("top-sources", [t("source"), t("sessions"), t("visitors"), t("leads")], o.sources.map(function (x) { return [x.source, num(x.sessions), num(x.visitors), num(x.leads || 0)]; }),
          null, { dim: "source", csv: csv("sources") });
      } },
      { key: "referrers", label: t("referrers"), draw: function () {
        return table("referrers", [t("referrer"), t("sessions")], o.referrers.map(function (x) { return [x.referrer, num(x.sessions)]; }),
          null, { dim: "referrer", csv: csv("referrers") });
      } },
      { key: "mediums", label: t("mediums"), draw: function () {
        return table("mediums", [t("medium"), t("sessions")], o.mediums.map(function (x) { return [x.medium, num(x.sessions)]; }),
          null, { dim: "medium", csv: csv("mediums") });
      } },
      { key: "campaigns", label: t("campaignsWeb"), draw: function () {
        return table("web-campaigns", [t("campaignCol"), t("sessions"), t("leads"), t("conversionsCount"), t("revenue")],
          o.campaigns.map(function (x) { return [x.campaign, num(x.sessions), num(x.leads || 0), num(x.conversions), money(x.revenueCents, cur)]; }),
          null, { dim: "campaign", csv: csv("campaigns") });
      } },
    ]),
    tabbed("panel-places", t("panelPlaces"), [
      { key: "countries", label: t("countries"), draw: function () {
        return table("countries", [t("country"), t("sessions")], o.countries.map(function (x) { return [x.country, num(x.sessions)]; }),
          null, { dim: "country", csv: csv("countries") });
      } },
      { key: "regions", label: t("regions"), draw: function () { return broken("regions", "region", t("region")); } },
      { key: "devices", label: t("devices"), draw: function () {
        return table("devices", [t("device"), t("sessions")], o.devices.map(function (x) { return [device(x.device), num(x.sessions)]; }),
          null, { dim: "device", values: o.devices.map(function (x) { return x.device; }), csv: csv("devices") });
      } },
      { key: "browsers", label: t("browsers"), draw: function () {
        return table("browsers", [t("browser"), t("sessions")], o.browsers.map(function (x) { return [x.browser, num(x.sessions)]; }),
          null, { dim: "browser", csv: csv("browsers") });
      } },
      { key: "os", label: t("systems"), draw: function () { return broken("systems", "os", t("system")); } },
    ]),
    tabbed("panel-events", t("panelEvents"), [
      { key: "events", label: t("customEvents"), draw: function () {
        return table("custom-events", [t("event"), t("count")], o.events.map(function (x) { return [x.name, num(x.count)]; }),
          t("noEvents"), { dim: "event", csv: csv("events") });
      } },
      { key: "goals", label: t("topGoals"), draw: function () {
        return table("top-goals", [t("goal"), t("completions"), t("sessions")], o.topGoals.map(function (x) { return [x.name, num(x.completions), num(x.sessions)]; }),
          t("noGoals"), { dim: "goal", values: o.topGoals.map(function (x) { return x.key; }), csv: csv("goals") });
      } },
    ]),
  ];
}
