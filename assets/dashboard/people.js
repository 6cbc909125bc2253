// ---- people (identified visitors) ----------------------------------------
import { state, site, render } from "./state.js";
import { S, t, h, add, num, date, say, fill, dialog } from "./dom.js";
import { api, explain } from "./api.js";
import { visitorDialog, recent } from "./journeys.js";

export function peopleScreen(main) {
  add(main, h("h2", {}, t("navPeople")));
  if (!state.sites.length) { add(main, h("p", {}, t("noPeople"))); return; }
  var siteId = site(state.siteId) ? state.siteId : state.sites[0].siteId;
  var sel = h("select", { id: "people-site", onchange: function () { state.siteId = sel.value; render(); } },
    state.sites.map(function (x) { return h("option", { value: x.siteId, selected: x.siteId === siteId }, x.name); }));
  var q = h("input", { id: "people-search", type: "search", maxlength: 100, value: state.peopleSearch || "" });
  var body = h("div", { id: "people-body" }, h("p", {}, t("loading")));
  var tbody = h("tbody", {});
  var more = h("button", { id: "people-more" }, t("more"));
  var table = h("table", { id: "people" }, h("thead", {}, h("tr", {},
    [t("personName"), t("email"), t("identifiedAt"), t("lastSeen"), t("sessions")].map(function (x, i) { return h("th", { scope: "col", class: i > 3 ? "n" : null }, x); }))), tbody);
  function load(cursor) {
    var params = new URLSearchParams();
    if (state.peopleSearch) params.set("search", state.peopleSearch);
    if (cursor) params.set("cursor", cursor);
    api("GET", "/dashboard/api/sites/" + encodeURIComponent(siteId) + "/people?" + params.toString()).then(function (res) {
      if (!cursor) tbody.replaceChildren();
      res.page.forEach(function (p) {
        add(tbody, h("tr", {},
          h("th", { scope: "row" }, h("button", { class: "link", "data-person": p.visitorId, onclick: function () { personDialog(siteId, p.visitorId); } }, p.name || p.email || p.visitorId)),
          h("td", {}, p.email || S.unknown), h("td", {}, date(p.identifiedAt, true)), h("td", {}, date(p.lastSeenAt, true)),
          h("td", { class: "n" }, num(p.sessions))));
      });
      fill(body, tbody.children.length ? table : h("p", { id: "people-none" }, t("noPeople")), res.isDone ? null : more);
      more.onclick = function () { load(res.continueCursor); };
    }).catch(function (e) { say(body, explain(e)); });
  }
  add(main, h("form", { class: "row", role: "search", onsubmit: function (ev) { ev.preventDefault(); state.peopleSearch = q.value.trim(); load(null); } },
    h("label", { for: "people-site" }, t("sitePicker"), sel),
    h("label", { for: "people-search" }, t("peopleSearch"), q),
    h("button", { type: "submit", id: "people-go" }, t("search"))), body);
  load(null);
}

function personDialog(siteId, visitorId) {
  api("GET", "/dashboard/api/sites/" + encodeURIComponent(siteId) + "/people/" + encodeURIComponent(visitorId)).then(function (p) {
    if (!p) return;
    function row(key, label, value) { return h("tr", { "data-k": key }, h("th", { scope: "row" }, label), h("td", {}, value)); }
    var attrs = Object.keys(p.attributes || {}).sort().map(function (k) { return row("attr-" + k, k, String(p.attributes[k])); });
    dialog(p.name || p.email || p.visitorId, h("div", { id: "person" }, h("table", {}, h("tbody", {},
      row("name", t("personName"), p.name || S.unknown),
      row("email", t("email"), p.email || S.unknown),
      row("identifiedAt", t("identifiedAt"), date(p.identifiedAt, true)),
      row("firstSeenAt", t("firstSeen"), date(p.firstSeenAt, true)),
      row("lastSeenAt", t("lastSeen"), date(p.lastSeenAt, true)),
      row("sessions", t("sessions"), num(p.sessions)),
      row("pageviews", t("pageviews"), num(p.pageviews)),
      row("conversions", t("conversions"), num(p.conversions)),
      attrs))), [h("button", { id: "person-timeline", onclick: function (ev) { ev.target.closest("dialog").close(); visitorDialog(siteId, visitorId, recent()); } }, t("visitorTimeline"))]);
  }).catch(function (e) { window.alert(explain(e)); });
}
