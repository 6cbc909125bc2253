// ---- sessions and journeys (listSessions, sessionJourney, visitorJourney) ----
// A client's sessions of the period, newest first and paged, each opening its
// journey; a visitor's timeline across sessions, from a session, a live row
// or a person.
import { state } from "./state.js";
import { S, t, h, add, num, date, say, duration, dialog, withFilters } from "./dom.js";
import { fn, explain, csvButton } from "./api.js";

var PAGE = 25;

// The sessions section of Visitas: one client's, under the screen's filters.
export function sessionsSection(siteId, p) {
  var box = h("section", { id: "sessions" });
  var head = h("div", { class: "row between" }, h("h3", {}, t("sessionsTitle")));
  add(box, head);
  if (!siteId) { add(box, h("p", { class: "muted" }, t("sessionsPickClient"))); return box; }
  var args = withFilters({ siteId: siteId, from: p.from, to: p.to });
  add(head, csvButton("listSessions", "sessions", Object.assign({ paginationOpts: { numItems: 100, cursor: null } }, args)));
  var tbody = h("tbody", {});
  var more = h("button", { id: "more-sessions", hidden: true }, t("moreSessions"));
  var msg = h("div", { "aria-live": "polite" });
  add(box, h("table", { id: "sessions-table" },
    h("thead", {}, h("tr", {}, [t("startedAt"), t("entryPage"), t("source"), t("pageviews"), t("duration"), t("conversionsCount"), ""].map(function (x, i) {
      return h("th", { scope: "col", class: i >= 3 && i <= 5 ? "n" : null }, x);
    }))), tbody), more, msg);
  function load(cursor) {
    fn("listSessions", Object.assign({ paginationOpts: { numItems: PAGE, cursor: cursor } }, args)).then(function (res) {
      res.page.forEach(function (s) {
        tbody.appendChild(h("tr", { "data-session": s.sessionId },
          h("th", { scope: "row" }, date(s.startedAt, true)), h("td", {}, s.entryPath), h("td", {}, s.source),
          h("td", { class: "n" }, num(s.pageviews)), h("td", { class: "n" }, duration(s.durationMs)), h("td", { class: "n" }, num(s.conversions)),
          h("td", {}, h("button", { class: "link", "data-journey": s.sessionId, onclick: function () { sessionDialog(s, p); } }, t("seeJourney")))));
      });
      if (!tbody.children.length) tbody.appendChild(h("tr", {}, h("td", { colspan: 7 }, t("noVisits"))));
      more.hidden = res.isDone;
      more.onclick = function () { load(res.continueCursor); };
    }).catch(function (e) { say(msg, explain(e)); });
  }
  load(null);
  return box;
}

function eventRows(events) {
  return events.map(function (e) {
    return h("tr", { "data-event": e.eventId }, h("th", { scope: "row" }, date(e.occurredAt, true)),
      h("td", {}, e.type === "pageview" ? t("eventPageview") : t("eventCustom", { name: e.name || S.unknown })), h("td", {}, e.path));
  });
}
function eventsTable(id, events) {
  return h("table", { id: id }, h("thead", {}, h("tr", {}, [t("when"), t("what"), t("page")].map(function (x) { return h("th", { scope: "col" }, x); }))),
    h("tbody", {}, eventRows(events)));
}

// One session's path, in the order it happened, and a way to its visitor's timeline.
export function sessionDialog(s, p) {
  fn("sessionJourney", { siteId: s.siteId, sessionId: s.sessionId, from: s.startedAt, to: Math.max(s.lastEventAt, s.startedAt), paginationOpts: { numItems: 200, cursor: null } }).then(function (j) {
    var facts = [s.source, s.device ? t("device_" + s.device) : null, s.country].filter(Boolean).join(" · ");
    dialog(t("sessionTitle", { when: date(s.startedAt, true) }), h("div", { id: "session-journey" },
      h("p", { class: "muted" }, facts, " — ", duration(s.durationMs)),
      eventsTable("session-events", j.page),
      j.isDone ? null : h("p", { class: "muted" }, t("journeyCut"))),
      [h("button", { id: "visitor-timeline", onclick: function (ev) { ev.target.closest("dialog").close(); visitorDialog(s.siteId, s.visitorId, p); } }, t("visitorTimeline"))]);
  }).catch(function (e) { window.alert(explain(e)); });
}

// A visitor's events on the client over the period (an identified person's with its aliases').
export function visitorDialog(siteId, visitorId, p) {
  fn("visitorJourney", { siteIds: [siteId], visitorId: visitorId, from: p.from, to: p.to, limit: 200 }).then(function (j) {
    dialog(t("visitorTitle"), h("div", { id: "visitor-journey" },
      eventsTable("visitor-events", j.events),
      j.truncated ? h("p", { class: "muted" }, t("journeyCut")) : null));
  }).catch(function (e) { window.alert(explain(e)); });
}

// The period of a live row's or a person's timeline: the last 90 days to now.
export function recent() {
  return { from: state.me.now - 90 * 86400000, to: state.me.now };
}
