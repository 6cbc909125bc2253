// The rastrod dashboard: a small client over /dashboard/api. No framework, no
// build step. Every figure of money and every ratio comes formatted from the
// server (service::metrics), so the client never computes a cost or a return;
// it only lays out, counts with Intl and draws the daily chart.
//
// Native ES modules, loaded by the browser as they are (no bundler): this entry
// draws the shell and sends each screen to its module; `state` holds what the
// page knows, `api` the calls, `dom` the element helpers and formatting.
import { state, canWrite, onRender } from "./state.js";
import { t, h, add, root } from "./dom.js";
import { api, explain, onSessionEnded } from "./api.js";
import { signInScreen } from "./signin.js";
import { leadsScreen } from "./leads.js";
import { visitsScreen } from "./visits.js";
import { peopleScreen } from "./people.js";
import { siteMapScreen } from "./sitemap.js";
import { vitalsScreen } from "./vitals.js";
import { goalsScreen } from "./goals.js";
import { linksScreen } from "./links.js";
import { integrations } from "./integrations.js";

// ---- the shell -----------------------------------------------------------
function shell() {
  var me = state.me;
  function navButton(view, label) {
    return h("li", {}, h("button", { "aria-current": state.view === view ? "page" : null, "data-view": view, onclick: function () { state.view = view; render(); } }, label));
  }
  var who = me.operator.name + (me.operator.canConfigure ? "" : " (" + t("readOnly") + ")");
  var header = h("header", { class: "top" },
    h("h1", {}, t("appTitle", { product: me.productName })),
    h("nav", { "aria-label": t("mainNav") }, h("ul", {}, navButton("leads", t("navLeads")), navButton("visits", t("navVisits")), navButton("people", t("navPeople")), navButton("sitemap", t("navSiteMap")), navButton("vitals", t("navVitals")), navButton("goals", t("navGoals")), navButton("links", t("navLinks")), navButton("integrations", t("navIntegrations")))),
    h("div", { class: "row" }, h("span", { id: "who" }, who),
      h("button", { id: "signout", onclick: function () { api("POST", "/dashboard/api/signout", {}).finally(function () { state.me = null; signInScreen(undefined, start); }); } }, t("signOut"))));
  var main = h("main", { id: "main" });
  root().replaceChildren(header, main);
  return main;
}

function render() {
  var main = shell();
  if (!canWrite()) add(main, h("p", { class: "muted" }, t("readOnlyNote")));
  if (state.view === "integrations") integrations(main);
  else if (state.view === "visits") visitsScreen(main);
  else if (state.view === "sitemap") siteMapScreen(main);
  else if (state.view === "vitals") vitalsScreen(main);
  else if (state.view === "goals") goalsScreen(main);
  else if (state.view === "people") peopleScreen(main);
  else if (state.view === "links") linksScreen(main);
  else leadsScreen(main);
}

function start() {
  return api("GET", "/dashboard/api/session").then(function (me) {
    state.me = me;
    return api("GET", "/dashboard/api/sites");
  }).then(function (sites) {
    state.sites = sites;
    render();
  }).catch(function (e) { if (e.status !== 401) root().replaceChildren(h("main", {}, h("p", { class: "error" }, explain(e)))); });
}
onRender(render);
onSessionEnded(function () { signInScreen(t("sessionEnded"), start); });
start();
