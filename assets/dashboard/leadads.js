// ---- Integrações → Formulários do Meta (Lead Ads) ------------------------
// Per site: its linked Pages (state, pending, failed, last webhook and
// reconciliation, unlink), a Page to link, whether the host's handler is set,
// and the forms with a rules editor whose simulation runs on every keystroke
// (simulateMetaFormRules: what a lead with these answers becomes; nothing saved).
import { state, site, canWrite } from "./state.js";
import { S, t, h, add, num, date, say, fill, dialog } from "./dom.js";
import { api, explain, fn } from "./api.js";

export function leadAdsSection(ids, msg) {
  var sec = h("section", { id: "lead-ads", "aria-labelledby": "lead-ads-h" }, h("h3", { id: "lead-ads-h" }, t("leadAdsTitle")),
    h("p", { class: "muted" }, t("leadAdsHelp")));
  var body = h("div", {}, h("p", {}, t("loading")));
  add(sec, body);
  var load = function (note) {
    fn("metaLinkedPages", { siteIds: ids }).then(function (sites) {
      fill(body, sites.map(function (sp) { return siteBlock(sp, msg, load); }));
      if (note) say(msg, note, "ok");
    }).catch(function (e) { say(body, explain(e)); });
  };
  load();
  return sec;
}

function when(ms) { return ms ? date(ms, true) : S.unknown; }

function siteBlock(sp, msg, reload) {
  var sc = site(sp.siteId) || { name: sp.siteId };
  var write = canWrite();
  var fail = function (e) { say(msg, explain(e)); };
  var rows = sp.pages.map(function (p) {
    return h("tr", { "data-page": p.pageId },
      h("th", { scope: "row" }, p.name + " (" + p.pageId + ")"),
      h("td", {}, p.subscribed ? t("pageSubscribed") : t("pageNotSubscribed")),
      h("td", { class: "n", "data-col": "pending" }, num(p.pending)),
      h("td", { class: "n", "data-col": "failed" }, num(p.failed)),
      h("td", {}, when(p.lastWebhookAt)),
      h("td", {}, when(p.lastReconciledAt)),
      h("td", { class: p.lastError ? "error" : "" }, p.lastError || S.unknown),
      h("td", {}, h("button", { class: "danger", "data-unlink-page": p.pageId, disabled: !write, onclick: function () {
        if (!window.confirm(t("unlinkPageConfirm", { page: p.name }))) return;
        fn("unlinkMetaPage", { siteId: sp.siteId, pageId: p.pageId }).then(function () { reload(t("saved")); }).catch(fail);
      } }, t("unlink"))));
  });
  var table = sp.pages.length
    ? h("table", { class: "pages" }, h("thead", {}, h("tr", {}, [t("page"), t("subscription"), t("pending"), t("failed"), t("lastWebhook"), t("lastReconciled"), t("lastError"), ""].map(function (x) { return h("th", { scope: "col" }, x); }))), h("tbody", {}, rows))
    : h("p", { class: "muted" }, t("noPages"));
  var handler = h("p", { "data-handler": sp.handlerReady ? "ready" : "missing", class: sp.handlerReady ? "" : "alert" },
    sp.handlerReady ? t("handlerReady") : t("handlerMissing"));
  var ready = sp.leadgenReady ? null : h("p", { class: "alert" }, t("leadgenNotReady"));
  var linker = h("div", { class: "row" });
  if (write) add(linker, h("button", { "data-list-pages": sp.siteId, onclick: function () {
    fn("metaPages", {}).then(function (res) {
      var free = res.pages.filter(function (p) { return !p.linkedSiteId && p.canRetrieveLeads; });
      var selId = "page-" + sp.siteId;
      var sel = h("select", { id: selId }, h("option", { value: "" }, t("choosePage")), free.map(function (p) { return h("option", { value: p.pageId }, p.name); }));
      fill(linker, h("label", { for: selId }, t("choosePageFor", { site: sc.name }), sel), " ",
        h("button", { "data-link-page": sp.siteId, onclick: function () {
          if (!sel.value) return;
          fn("linkMetaPage", { siteId: sp.siteId, pageId: sel.value }).then(function () { reload(t("saved")); }).catch(fail);
        } }, t("link")));
    }).catch(fail);
  } }, t("listPages")));
  var forms = h("div", { "data-forms": sp.siteId });
  if (sp.pages.length) formsTable(sp.siteId, forms, msg);
  return h("div", { class: "lead-ads-site", "data-site": sp.siteId }, h("h4", {}, sc.name), ready, handler, table, linker, forms);
}

function formsTable(siteId, box, msg) {
  Promise.all([fn("metaForms", { siteId: siteId }), api("GET", "/dashboard/api/sites/" + encodeURIComponent(siteId) + "/event-map")]).then(function (res) {
    var forms = res[0].forms, columns = res[1].columns;
    var rows = forms.map(function (f) {
      return h("tr", { "data-form": f.formId },
        h("th", { scope: "row" }, f.name),
        h("td", {}, f.status),
        h("td", { class: "n" }, num(f.leads30d)),
        h("td", {}, f.rules ? rulesSummary(f.rules, columns) : t("noRules")),
        h("td", {}, h("button", { "data-edit-rules": f.formId, onclick: function () { rulesEditor(siteId, f, columns, msg, function () { formsTable(siteId, box, msg); }); } }, canWrite() ? t("editRules") : t("viewRules"))));
    });
    fill(box, h("h5", {}, t("formsTitle")), forms.length
      ? h("table", { class: "forms" }, h("thead", {}, h("tr", {}, [t("form"), t("formStatus"), t("leads30d"), t("rules"), ""].map(function (x) { return h("th", { scope: "col" }, x); }))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, t("noForms")));
  }).catch(function (e) { say(box, explain(e)); });
}

function columnName(key, columns) {
  var c = columns.find(function (x) { return x.key === key; });
  return c ? c.name : key;
}

function rulesSummary(r, columns) {
  var parts = [];
  if (r.column) parts.push(t("ruleColumn", { column: columnName(r.column, columns) }));
  if (r.stage === "qualified") parts.push(t("ruleAlwaysQualified"));
  (r.qualifyWhen || []).forEach(function (c) { parts.push(t("ruleQualifyWhen", { key: c.key, values: c.anyOf.join(", ") })); });
  if (r.label) parts.push(t("ruleLabel", { label: r.label }));
  return parts.join(" · ") || t("noRules");
}

// The editor: column, stage, label and one qualifying condition; beside it an
// answer per question and the live outcome of those answers.
function rulesEditor(siteId, f, columns, msg, done) {
  var r = f.rules || {};
  var readOnly = !canWrite();
  var cond = (r.qualifyWhen || [])[0] || { key: "", anyOf: [] };
  var col = h("select", { id: "rule-column", disabled: readOnly }, h("option", { value: "" }, t("noColumn")),
    columns.map(function (c) { return h("option", { value: c.key, selected: r.column === c.key }, c.name); }));
  var stage = h("select", { id: "rule-stage", disabled: readOnly },
    h("option", { value: "" }, t("stageByAnswers")), h("option", { value: "qualified", selected: r.stage === "qualified" }, t("stage_qualified")));
  var label = h("input", { id: "rule-label", type: "text", value: r.label || "", disabled: readOnly, placeholder: "{" + ((f.questions.find(function (q) { return q.type === "CUSTOM"; }) || {}).key || "pergunta") + "}" });
  var qkey = h("select", { id: "rule-qkey", disabled: readOnly }, h("option", { value: "" }, t("noCondition")),
    f.questions.map(function (q) { return h("option", { value: q.key, selected: cond.key === q.key }, q.label || q.key); }));
  var qvals = h("input", { id: "rule-qvalues", type: "text", value: cond.anyOf.join(", "), disabled: readOnly });
  var answers = {};
  var answerRows = f.questions.map(function (q) {
    var id = "sim-" + q.key;
    answers[q.key] = h("input", { id: id, type: "text", "data-question": q.key });
    return h("label", { for: id }, q.label || q.key, answers[q.key]);
  });
  var outcome = h("div", { id: "sim-outcome", "aria-live": "polite" }, S.unknown);
  var note = h("div", { "aria-live": "polite" });
  function rules() {
    var out = {};
    if (col.value) out.column = col.value;
    if (stage.value) out.stage = stage.value;
    if (label.value.trim()) out.label = label.value.trim();
    var vals = qvals.value.split(",").map(function (v) { return v.trim(); }).filter(Boolean);
    if (qkey.value && vals.length) out.qualifyWhen = [{ key: qkey.value, anyOf: vals }];
    return out;
  }
  var seq = 0;
  function simulate() {
    var mine = ++seq;
    var list = Object.keys(answers).map(function (k) { return { key: k, value: answers[k].value }; }).filter(function (a) { return a.value; });
    fn("simulateMetaFormRules", { siteId: siteId, formId: f.formId, rules: rules(), answers: list }).then(function (o) {
      if (mine !== seq) return;
      outcome.setAttribute("data-stage", o.stage);
      fill(outcome, h("p", {}, t("simColumn", { column: o.column ? columnName(o.column, columns) : t("noColumn") })),
        h("p", { "data-k": "stage" }, t("simStage", { stage: t("stage_" + o.stage) })),
        h("p", { "data-k": "label" }, t("simLabel", { label: o.label || S.unknown })));
    }).catch(function (e) { if (mine === seq) fill(outcome, h("p", { class: "error" }, explain(e))); });
  }
  [col, stage, label, qkey, qvals].concat(Object.keys(answers).map(function (k) { return answers[k]; })).forEach(function (el) {
    el.addEventListener("input", simulate);
    el.addEventListener("change", simulate);
  });
  var content = h("div", { id: "rules-editor" },
    h("fieldset", {}, h("legend", {}, t("rulesTitle")),
      h("label", { for: "rule-column" }, t("column"), col),
      h("label", { for: "rule-stage" }, t("stage"), stage),
      h("label", { for: "rule-label" }, t("labelTemplate"), label),
      h("label", { for: "rule-qkey" }, t("qualifyWhenQuestion"), qkey),
      h("label", { for: "rule-qvalues" }, t("qualifyWhenValues"), qvals)),
    h("fieldset", {}, h("legend", {}, t("simulationTitle")), answerRows, outcome),
    note);
  var buttons = readOnly ? [] : [h("button", { class: "primary", id: "rules-save", onclick: function () {
    var rr = rules();
    fn("setMetaFormRules", { siteId: siteId, formId: f.formId, rules: Object.keys(rr).length ? rr : null })
      .then(function () { d.close(); say(msg, t("saved"), "ok"); done(); }).catch(function (e) { say(note, explain(e)); });
  } }, t("save"))];
  var d = dialog(t("rulesFor", { form: f.name }), content, buttons);
  simulate();
}
