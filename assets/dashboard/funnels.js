// ---- the funnel editor -----------------------------------------------------
// Steps in order (a page pattern or an event name each), a window, and what
// the draft would count over the screen's days while it is typed: each
// change asks `previewFunnel` (the same counting as a saved funnel, nothing
// written) at most every 300 ms, and an answer older than the latest draft
// is dropped. Saving is `upsertFunnel`; a saved funnel can be loaded back,
// changed (its index is rebuilt) or removed.
import { t, h, add, num, rate, say, fill, grid } from "./dom.js";
import { render } from "./state.js";
import { explain, fn } from "./api.js";

var MAX_STEPS = 10, MINUTE = 60000;

function matcherOf(text) {
  var v = text.trim();
  return v.charAt(0) === "/" ? { kind: "pageview", path: v } : { kind: "event", name: v };
}
function textOf(m) { return m.kind === "event" ? m.name : m.path; }

export function funnelEditor(siteId, range, msg) {
  var box = h("section", { id: "funnel-editor" });
  var editing = null, seq = 0, timer = null;
  var title = h("h4", { id: "funnel-form-title" }, t("newFunnel"));
  var key = h("input", { id: "funnel-key", required: true, pattern: "[a-z0-9_-]{1,64}" });
  var name = h("input", { id: "funnel-name", required: true, maxlength: 100 });
  var windowMin = h("input", { id: "funnel-window", type: "number", min: 1, max: 129600, required: true, value: "60" });
  var stepsBox = h("ol", { id: "funnel-steps", class: "steps" });
  var addStep = h("button", { type: "button", id: "funnel-add-step", onclick: function () { stepRow({ label: "", matcher: { kind: "pageview", path: "" } }); changed(); } }, t("addStep"));
  var cancel = h("button", { type: "button", id: "funnel-cancel", hidden: true, onclick: function () { load(null); } }, t("cancel"));
  var preview = h("div", { id: "funnel-preview", "aria-live": "polite" });
  var list = h("div", { id: "funnel-defs-box" });

  function stepRow(st) {
    var n = stepsBox.children.length + 1;
    var label = h("input", { class: "step-label", "aria-label": t("stepLabel", { n: n }), maxlength: 100, value: st.label, oninput: changed });
    var match = h("input", { class: "step-matcher", "aria-label": t("stepMatcher", { n: n }), placeholder: "/produto/:id", value: textOf(st.matcher), oninput: changed });
    var li = h("li", { class: "row" }, label, match,
      h("button", { type: "button", class: "step-remove", "aria-label": t("removeStep", { n: n }), onclick: function () { li.remove(); changed(); } }, "×"));
    stepsBox.appendChild(li);
    addStep.disabled = stepsBox.children.length >= MAX_STEPS;
  }
  function steps() {
    return Array.prototype.map.call(stepsBox.children, function (li) {
      return { label: li.querySelector(".step-label").value.trim(), matcher: matcherOf(li.querySelector(".step-matcher").value) };
    });
  }
  function draft() { return { steps: steps(), windowMs: Number(windowMin.value) * MINUTE }; }

  // The preview of what is typed now; the server checks the draft as it checks a save.
  function changed() {
    addStep.disabled = stepsBox.children.length >= MAX_STEPS;
    clearTimeout(timer);
    timer = setTimeout(showPreview, 300);
  }
  function showPreview() {
    var d = draft(), mine = ++seq;
    var ready = d.steps.length >= 2 && d.steps.every(function (s) { return s.label && (s.matcher.path || s.matcher.name); });
    if (!ready) { fill(preview, h("p", { class: "muted" }, t("funnelPreviewHint"))); return; }
    preview.setAttribute("aria-busy", "true");
    fn("previewFunnel", { siteId: siteId, from: range.from, to: range.to, timezone: range.zone, steps: d.steps, windowMs: d.windowMs }).then(function (p) {
      if (mine !== seq) return;
      preview.removeAttribute("aria-busy");
      fill(preview, grid("funnel-preview-table", t("funnelPreviewTitle", { rate: rate(p.conversionRate) }), [t("step"), t("visitors"), t("dropoff"), t("conversionRate")],
        p.steps.map(function (st) { return [st.index + ". " + st.label, num(st.visitors), num(st.dropoff), rate(st.conversionRate)]; }), t("noVisits")),
        p.incomplete ? h("p", { class: "alert" }, t("funnelPreviewIncomplete")) : null);
    }).catch(function (e) { if (mine === seq) { preview.removeAttribute("aria-busy"); say(preview, explain(e)); } });
  }

  // A saved funnel into the form (or an empty one with two blank steps).
  function load(f) {
    editing = f;
    key.value = f ? f.key : ""; name.value = f ? f.name : "";
    windowMin.value = String(f ? Math.round(f.windowMs / MINUTE) : 60);
    stepsBox.replaceChildren();
    (f ? f.steps : [{ label: "", matcher: { kind: "pageview", path: "" } }, { label: "", matcher: { kind: "pageview", path: "" } }]).forEach(stepRow);
    title.textContent = f ? t("editFunnel", { funnel: f.key }) : t("newFunnel");
    cancel.hidden = !f;
    showPreview();
  }

  var form = h("form", { id: "funnel-form", onsubmit: function (ev) {
    ev.preventDefault();
    var d = draft(), a = { siteId: siteId, key: key.value.trim(), name: name.value.trim(), steps: d.steps, windowMs: d.windowMs };
    if (editing) a.funnelId = editing.funnelId;
    fn("upsertFunnel", a).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
  } }, title,
    h("div", { class: "row" }, h("label", { for: "funnel-key" }, t("goalKey"), key), h("label", { for: "funnel-name" }, t("goalName"), name),
      h("label", { for: "funnel-window" }, t("funnelWindow"), windowMin)),
    h("p", { class: "muted" }, t("funnelStepsHelp")), stepsBox, addStep, preview,
    h("div", { class: "row" }, h("button", { class: "primary", type: "submit", id: "funnel-save" }, t("save")), cancel));
  windowMin.addEventListener("input", changed);
  add(box, list, form);

  fn("listFunnels", { siteId: siteId }).then(function (funnels) {
    fill(list, grid("funnel-defs", t("funnelsDefined"), [t("funnel"), t("steps"), t("funnelWindow"), ""], funnels.map(function (f) {
      return [f.name + " (" + f.key + ")", num(f.steps.length), num(Math.round(f.windowMs / MINUTE)),
        h("span", { class: "row" },
          h("button", { type: "button", "data-edit-funnel": f.key, onclick: function () { load(f); name.focus(); } }, t("edit")),
          h("button", { type: "button", "data-remove-funnel": f.key, onclick: function () {
            fn("removeFunnel", { siteId: siteId, funnelId: f.funnelId }).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
          } }, t("remove")))];
    }), t("noFunnels")));
  }).catch(function (e) { say(msg, explain(e)); });
  load(null);
  return box;
}
