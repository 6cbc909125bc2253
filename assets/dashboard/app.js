// The rastrod dashboard: a small client over /dashboard/api. No framework, no
// build step. Every figure of money and every ratio comes formatted from the
// server (service::metrics), so the client never computes a cost or a return;
// it only lays out, counts with Intl and draws the daily chart.
//
// Native ES modules, loaded by the browser as they are (no bundler): this entry
// draws the shell and sends each screen to its module; `state` holds what the
// page knows, `api` the calls, `dom` the element helpers and formatting.
import { state, canWrite, onRender, toHash, fromHash } from "./state.js";
import { t, h, add, root } from "./dom.js";
import { api, explain, onSessionEnded } from "./api.js";
import { signInScreen } from "./signin.js";
import { leadsScreen } from "./leads.js";

// The first screen (Leads e gasto) comes with the page; every other screen's
// module is fetched the first time it is opened (the browser keeps it), so
// the first screen stays light as screens grow.
var SCREENS = {
  visits: ["./visits.js", "visitsScreen"], people: ["./people.js", "peopleScreen"], sitemap: ["./sitemap.js", "siteMapScreen"],
  vitals: ["./vitals.js", "vitalsScreen"], goals: ["./goals.js", "goalsScreen"], links: ["./links.js", "linksScreen"],
  integrations: ["./integrations.js", "integrations"],
};
var drawing = 0;

// ---- the shell -----------------------------------------------------------
// On a phone the nav folds behind a "Menu" button (app.css shows the button
// only on narrow screens); choosing a screen folds it again.
var navOpen = false;
function shell() {
  var me = state.me;
  function navButton(view, label) {
    return h("li", {}, h("button", { "aria-current": state.view === view ? "page" : null, "data-view": view, onclick: function () { state.view = view; navOpen = false; render(); } }, label));
  }
  var toggle = h("button", { class: "menu-toggle", id: "menu-toggle", "aria-expanded": navOpen ? "true" : "false", "aria-controls": "main-nav",
    onclick: function () { navOpen = !navOpen; nav.classList.toggle("open", navOpen); toggle.setAttribute("aria-expanded", navOpen ? "true" : "false"); } }, t("menu"));
  var who = me.operator.name + (me.operator.canConfigure ? "" : " (" + t("readOnly") + ")");
  var header = h("header", { class: "top" },
    h("h1", {}, t("appTitle", { product: me.productName })),
    toggle,
    h("nav", { "aria-label": t("mainNav"), id: "main-nav", class: navOpen ? "open" : null }, h("ul", {}, navButton("leads", t("navLeads")), navButton("visits", t("navVisits")), navButton("people", t("navPeople")), navButton("sitemap", t("navSiteMap")), navButton("vitals", t("navVitals")), navButton("goals", t("navGoals")), navButton("links", t("navLinks")), navButton("integrations", t("navIntegrations")))),
    h("div", { class: "row" }, h("span", { id: "who" }, who),
      h("button", { id: "signout", onclick: function () { api("POST", "/dashboard/api/signout", {}).finally(function () { state.me = null; signInScreen(undefined, start); }); } }, t("signOut"))));
  var main = h("main", { id: "main" });
  var nav = header.querySelector("nav");
  root().replaceChildren(header, main);
  return main;
}

// The address follows the screen: a new pick is a new entry in the history
// (Back returns to the screen before); the first drawing only tidies it.
var drawn = false;
function remember() {
  var hash = toHash(), now = location.hash || "#";
  if (hash !== now) {
    var to = hash === "#" ? location.pathname + location.search : hash;
    if (drawn) history.pushState(null, "", to); else history.replaceState(null, "", to);
  }
  drawn = true;
}

// Wide tables scroll inside their card on a narrow screen: every table the
// screens draw (now or when their data arrives) is wrapped once in a
// focusable region named after its heading.
function scrollable(table) {
  if (table.parentNode && table.parentNode.classList.contains("scroll")) return;
  var section = table.closest("section, dialog"), heading = section && section.querySelector("h2, h3, h4");
  var box = h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": heading ? heading.textContent : t("table") });
  table.parentNode.insertBefore(box, table);
  box.appendChild(table);
}
new MutationObserver(function (changes) {
  changes.forEach(function (c) {
    c.addedNodes.forEach(function (n) {
      if (n.nodeType !== 1) return;
      if (n.tagName === "TABLE") scrollable(n);
      else n.querySelectorAll("table").forEach(scrollable);
    });
  });
}).observe(document.body, { childList: true, subtree: true });

function render() {
  // A screen's live stream ends with it.
  if (state.stream) { state.stream.close(); state.stream = null; }
  var main = shell();
  remember();
  if (!canWrite()) add(main, h("p", { class: "muted" }, t("readOnlyNote")));
  // Only the latest pick draws: a screen whose module arrives after another
  // pick is dropped.
  var mine = ++drawing, lazy = SCREENS[state.view];
  if (!lazy) { leadsScreen(main); return; }
  import(lazy[0]).then(function (m) { if (mine === drawing) m[lazy[1]](main); })
    .catch(function (e) { if (mine === drawing) add(main, h("p", { class: "error", role: "alert" }, explain(e))); });
}

function start() {
  return api("GET", "/dashboard/api/session").then(function (me) {
    state.me = me;
    return api("GET", "/dashboard/api/sites");
  }).then(function (sites) {
    state.sites = sites;
    known();
    render();
  }).catch(function (e) { if (e.status !== 401) root().replaceChildren(h("main", {}, h("p", { class: "error" }, explain(e)))); });
}
onRender(render);
// A link to a client this operator cannot see shows every client.
function known() {
  if (state.siteId && !state.sites.some(function (s) { return s.siteId === state.siteId; })) state.siteId = "";
}
fromHash(location.hash);
window.addEventListener("popstate", function () { fromHash(location.hash); known(); if (state.me) render(); });
onSessionEnded(function () { signInScreen(t("sessionEnded"), start); });
start();
