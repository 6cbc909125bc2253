// ---- the definitions behind Metas e receita (operators who may configure) --
// Goals (made, edited, paused and resumed: a paused goal keeps its history
// and counts nothing new), affiliates (made, edited, paused and resumed), funnels (the
// editor, funnels.js), the retention policy and the site's own settings.
import { t, h, add, num, say, fill, grid } from "./dom.js";
import { render } from "./state.js";
import { explain, fn } from "./api.js";
import { funnelEditor } from "./funnels.js";

export function matcherText(m) { return m.kind === "event" ? t("matcherEvent", { name: m.name }) : t("matcherPage", { path: m.path }); }

export function definitionsPanel(id, range) {
  var msg = h("div", { "aria-live": "polite", id: "definitions-msg" });
  var box = h("section", { id: "definitions" }, h("h3", {}, t("definitionsTitle")), msg);
  function field(fid, label, attrs) { var i = h("input", Object.assign({ id: fid, name: fid }, attrs || {})); return [h("label", { for: fid }, label, i), i]; }
  var gKey = field("goal-key", t("goalKey"), { required: true, pattern: "[a-z0-9_-]{1,64}" });
  var gName = field("goal-name", t("goalName"), { required: true, maxlength: 100 });
  var gPath = field("goal-path", t("goalPath"), { placeholder: "/obrigado" });
  var gValue = field("goal-value", t("goalValueCents"), { type: "number", min: 0 });
  // Editing: the goal being changed (its id and whether it is paused), or none for a new one.
  var editing = null;
  var gTitle = h("h4", { id: "goal-form-title" }, t("newGoal"));
  var gCancel = h("button", { type: "button", id: "goal-cancel", hidden: true, onclick: function () { editGoal(null); } }, t("cancel"));
  function editGoal(g) {
    editing = g;
    gKey[1].value = g ? g.key : ""; gName[1].value = g ? g.name : "";
    gPath[1].value = g ? (g.matcher.kind === "event" ? g.matcher.name : g.matcher.path) : "";
    gValue[1].value = g && g.valueCents != null ? String(g.valueCents) : "";
    gTitle.textContent = g ? t("editGoal", { goal: g.key }) : t("newGoal");
    gCancel.hidden = !g;
    if (g) gName[1].focus();
  }
  function goalArgs(g, active) {
    var a = { siteId: id, key: g.key, name: g.name, matcher: g.matcher, active: active };
    if (g.goalId) a.goalId = g.goalId;
    if (g.valueCents != null) a.valueCents = g.valueCents;
    return a;
  }
  var goalForm = h("form", { id: "goal-form", onsubmit: function (ev) {
    ev.preventDefault();
    var p = gPath[1].value.trim(), m = p.charAt(0) === "/" ? { kind: "pageview", path: p } : { kind: "event", name: p };
    var g = { goalId: editing ? editing.goalId : null, key: gKey[1].value.trim(), name: gName[1].value.trim(), matcher: m,
      valueCents: gValue[1].value === "" ? null : Number(gValue[1].value) };
    fn("upsertGoal", goalArgs(g, editing ? editing.active : true)).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
  } }, gTitle, gKey[0], gName[0], gPath[0], gValue[0], h("div", { class: "row" }, h("button", { class: "primary", type: "submit", id: "goal-save" }, t("save")), gCancel));
  var aSlug = field("aff-slug", t("affiliateSlug"), { required: true, pattern: "[a-z0-9][a-z0-9-]{0,63}" });
  var aName = field("aff-name", t("affiliateName"), { required: true, maxlength: 100 });
  var aBps = field("aff-bps", t("commissionBps"), { type: "number", min: 0, max: 10000, required: true });
  var aDays = field("aff-days", t("windowDays"), { type: "number", min: 1, max: 365, required: true, value: "30" });
  var editingAff = null;
  var aTitle = h("h4", { id: "affiliate-form-title" }, t("newAffiliate"));
  var aCancel = h("button", { type: "button", id: "affiliate-cancel", hidden: true, onclick: function () { editAffiliate(null); } }, t("cancel"));
  function editAffiliate(a) {
    editingAff = a;
    aSlug[1].value = a ? a.slug : ""; aName[1].value = a ? a.name : "";
    aBps[1].value = a ? String(a.commissionBps) : ""; aDays[1].value = a ? String(a.windowDays) : "30";
    aTitle.textContent = a ? t("editAffiliate", { affiliate: a.slug }) : t("newAffiliate");
    aCancel.hidden = !a;
    if (a) aName[1].focus();
  }
  var affForm = h("form", { id: "affiliate-form", onsubmit: function (ev) {
    ev.preventDefault();
    var a = { siteId: id, slug: aSlug[1].value.trim(), name: aName[1].value.trim(), commissionBps: Number(aBps[1].value), windowDays: Number(aDays[1].value) };
    if (editingAff) a.affiliateId = editingAff.affiliateId;
    fn("upsertAffiliate", a).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
  } }, aTitle, aSlug[0], aName[0], aBps[0], aDays[0], h("div", { class: "row" }, h("button", { class: "primary", type: "submit", id: "affiliate-save" }, t("save")), aCancel));
  var lists = h("div", {});
  var retention = h("div", { id: "retention" });
  var settings = h("div", { id: "site-settings" });
  add(box, lists, goalForm, affForm, funnelEditor(id, range, msg), retention, settings);
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
    function button(label, attrs, onclick) { return h("button", Object.assign({ type: "button", onclick: onclick }, attrs), label); }
    function pause(g) {
      var to = !g.active;
      return button(t(to ? "resume" : "pause"), { "data-pause": g.key }, function () {
        fn("upsertGoal", goalArgs(g, to)).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
      });
    }
    // A paused affiliate tags no new landing; the visitors it brought keep their window.
    function pauseAffiliate(a) {
      var to = !a.active;
      return button(t(to ? "resume" : "pause"), { "data-pause-affiliate": a.slug }, function () {
        fn("upsertAffiliate", { siteId: id, affiliateId: a.affiliateId, slug: a.slug, name: a.name, commissionBps: a.commissionBps, windowDays: a.windowDays, active: to })
          .then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
      });
    }
    fill(lists,
      grid("goal-defs", t("goalsDefined"), [t("goal"), t("matcher"), t("status"), ""], res[0].map(function (g) {
        return [g.key, matcherText(g.matcher), h("span", { "data-state": g.active ? "active" : "paused" }, t(g.active ? "goalActive" : "goalPaused")),
          h("span", { class: "row" }, button(t("edit"), { "data-edit-goal": g.key }, function () { editGoal(g); }), pause(g), remover("removeGoal", { siteId: id, goalId: g.goalId }))];
      }), t("noGoals")),
      grid("affiliate-defs", t("affiliatesDefined"), [t("affiliate"), t("commissionBps"), t("windowDays"), t("status"), ""], res[1].map(function (a) {
        return [a.slug, num(a.commissionBps), num(a.windowDays), h("span", { "data-state": a.active ? "active" : "paused" }, t(a.active ? "affiliateActive" : "affiliatePaused")),
          h("span", { class: "row" }, button(t("edit"), { "data-edit-affiliate": a.slug }, function () { editAffiliate(a); }), pauseAffiliate(a),
            remover("removeAffiliate", { siteId: id, affiliateId: a.affiliateId }))];
      }), t("noAffiliates")));
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
