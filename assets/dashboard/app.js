// The rastrod dashboard: a small client over /dashboard/api. No framework, no
// build step. Every figure of money and every ratio comes formatted from the
// server (service::metrics), so this file never computes a cost or a return;
// it only lays out, counts with Intl and draws the daily chart.
"use strict";
(function () {
  var S = window.RASTRO_STRINGS;
  var DAY = 86400000;
  var state = { me: null, sites: [], view: "leads", siteId: "", days: 30, leadsPage: [], loginState: null };

  // ---- helpers -------------------------------------------------------------
  function t(key, vars) {
    var s = S[key] == null ? key : S[key];
    if (vars) Object.keys(vars).forEach(function (k) { s = s.split("{" + k + "}").join(String(vars[k])); });
    return s;
  }
  // Builds an element; strings become text nodes (never HTML).
  function h(tag, attrs) {
    var el = document.createElement(tag);
    var a = attrs || {};
    Object.keys(a).forEach(function (k) {
      var v = a[k];
      if (v == null || v === false) return;
      if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else el.setAttribute(k, v === true ? "" : v);
    });
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  // Appends every argument after the first: nodes, strings, numbers, arrays of them.
  function add(el) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c == null || c === false) continue;
      if (Array.isArray(c)) c.forEach(function (x) { add(el, x); });
      else el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
  }
  var intFmt = new Intl.NumberFormat(S.locale);
  var pctFmt = new Intl.NumberFormat(S.locale, { style: "percent", maximumFractionDigits: 1 });
  var decFmt = new Intl.NumberFormat(S.locale, { maximumFractionDigits: 4 });
  function num(n) { return n == null ? S.unknown : intFmt.format(n); }
  function site(id) { return state.sites.find(function (s) { return s.siteId === id; }); }
  function tz() { var s = site(state.siteId) || state.sites[0]; return (s && s.timezone) || "UTC"; }
  function date(ms, withTime, zone) {
    if (ms == null) return S.unknown;
    var o = { timeZone: zone || tz(), day: "2-digit", month: "2-digit", year: "numeric" };
    if (withTime) { o.hour = "2-digit"; o.minute = "2-digit"; }
    return new Intl.DateTimeFormat(S.locale, o).format(new Date(ms));
  }
  function canWrite() { return state.me && state.me.operator.canConfigure; }

  function ApiError(status, body) { this.status = status; this.code = body && body.code; this.message = body && body.message; }
  function api(method, path, body) {
    var opts = { method: method, credentials: "same-origin", headers: {} };
    if (method !== "GET") opts.headers["X-CSRF-Token"] = state.me ? state.me.csrfToken : "";
    if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
    return fetch(path, opts).then(function (r) {
      return r.text().then(function (txt) {
        var data = null;
        try { data = txt ? JSON.parse(txt) : null; } catch (e) { data = null; }
        if (r.status === 401 && path !== "/dashboard/api/signin") { state.me = null; signInScreen(t("sessionEnded")); }
        if (!r.ok) throw new ApiError(r.status, data);
        return data;
      });
    });
  }
  function explain(e) {
    if (e && e.status === 403) return t("forbidden");
    if (e && e.code === "CONFLICT") return t("conflict");
    return t("error", { message: (e && (e.message || e.code)) || String(e) });
  }
  function say(box, msg, kind) {
    box.replaceChildren();
    if (msg) add(box, h("div", { class: kind || "error", role: kind === "ok" ? "status" : "alert" }, msg));
  }
  function root() { return document.getElementById("app"); }
  // Replaces an element's children (skipping the absent ones, unlike replaceChildren).
  function fill(el) { el.replaceChildren(); add.apply(null, arguments); }

  // ---- sign-in -------------------------------------------------------------
  function signInScreen(note) {
    var msg = h("div", { "aria-live": "polite" });
    var name = h("input", { id: "op-name", name: "username", autocomplete: "username", required: true });
    var pw = h("input", { id: "op-password", name: "password", type: "password", autocomplete: "current-password", required: true });
    var form = h("form", {
      onsubmit: function (ev) {
        ev.preventDefault();
        api("POST", "/dashboard/api/signin", { name: name.value, password: pw.value })
          .then(function () { pw.value = ""; return start(); })
          .catch(function (e) { say(msg, e.status === 429 ? t("tooManyAttempts") : e.status === 401 ? t("wrongPassword") : explain(e)); });
      }
    },
      h("label", { for: "op-name" }, t("operatorName"), name),
      h("label", { for: "op-password" }, t("password"), pw),
      h("button", { class: "primary", type: "submit", id: "signin" }, t("signIn")));
    fill(root(), h("main", { class: "signin" }, h("h1", {}, t("signInTitle")), note ? h("p", { class: "alert" }, note) : null, msg, form));
    name.focus();
  }

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
        h("button", { id: "signout", onclick: function () { api("POST", "/dashboard/api/signout", {}).finally(function () { state.me = null; signInScreen(); }); } }, t("signOut"))));
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

  // ---- visits (web analytics) ----------------------------------------------
  function rate(x) { return x == null ? S.unknown : pctFmt.format(x); }
  function duration(ms) {
    if (ms == null) return S.unknown;
    var sec = Math.round(ms / 1000);
    return Math.floor(sec / 60) + " min " + String(sec % 60).padStart(2, "0") + " s";
  }
  function visitsScreen(main) {
    var body = h("div", { id: "visits-body" }, h("p", {}, t("loading")));
    add(main, h("h2", {}, t("navVisits")), pickers(function () { render(); }), body);
    if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
    // Whole UTC days up to the end of today: the overview counts today so far too.
    var today = Math.floor(state.me.now / DAY) * DAY, ids = siteIds();
    var r = { from: today - (state.days - 1) * DAY, to: today + DAY - 1 };
    Promise.all([
      api("POST", "/dashboard/api/analytics/overview", { siteIds: ids, from: r.from, to: r.to }),
      api("POST", "/dashboard/api/analytics/live", { siteIds: ids, limit: 20 }),
    ]).then(function (res) {
      var o = res[0], live = res[1], tt = o.totals;
      function card(key, label, value) {
        return h("div", { class: "card", "data-k": key }, h("div", { class: "k" }, label), h("div", { class: "v" }, value));
      }
      function table(id, title, head, rows) {
        return h("section", {}, h("h3", {}, title), rows.length
          ? h("table", { id: id }, h("thead", {}, h("tr", {}, head.map(function (c, i) { return h("th", { scope: "col", class: i ? "n" : null }, c); }))),
              h("tbody", {}, rows.map(function (row) { return h("tr", {}, row.map(function (c, i) { return i ? h("td", { class: "n" }, c) : h("th", { scope: "row" }, c); })); })))
          : h("p", {}, t("noVisits")));
      }
      var W = 720, H = 180, P = 28, n = o.series.length || 1, bw = (W - 2 * P) / n;
      var max = Math.max(1, Math.max.apply(null, o.series.map(function (b) { return b.pageviews; })));
      var svg = s("svg", { class: "chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": "visits-chart-h" });
      svg.appendChild(s("line", { x1: P, y1: H - P, x2: W - P, y2: H - P, stroke: "#8c959f" }));
      o.series.forEach(function (b, i) {
        var bh = (H - 2 * P) * b.pageviews / max;
        svg.appendChild(s("rect", { x: P + i * bw + 1, y: H - P - bh, width: Math.max(1, bw - 2), height: bh, fill: "#54aeff" },
          s("title", {}, date(b.bucketStart, false, "UTC") + ": " + num(b.pageviews) + " " + t("pageviews").toLowerCase())));
      });
      fill(body,
        h("section", { "aria-labelledby": "visits-summary-h" }, h("h3", { id: "visits-summary-h" }, t("visitsSummary")),
          h("div", { class: "cards" },
            card("visitors", t("visitors"), num(tt.visitors)),
            card("sessions", t("sessions"), num(tt.sessions)),
            card("pageviews", t("pageviews"), num(tt.pageviews)),
            card("bounceRate", t("bounceRate"), rate(tt.bounceRate)),
            card("avgDuration", t("avgDuration"), duration(tt.avgDurationMs)),
            card("live", t("liveNow"), num(live.count)))),
        h("section", {}, h("h3", { id: "visits-chart-h" }, t("visitsChart")), svg),
        table("top-pages", t("topPages"), [t("page"), t("pageviews"), t("visitors")],
          o.pages.map(function (p) { return [p.route, num(p.pageviews), num(p.visitors)]; })),
        table("top-sources", t("topSources"), [t("source"), t("sessions"), t("visitors")],
          o.sources.map(function (x) { return [x.source, num(x.sessions), num(x.visitors)]; })),
        table("live-visitors", t("liveTitle"), [t("page"), t("source"), t("device"), t("lastSeen")],
          live.visitors.map(function (v) { return [v.currentPath, v.source, v.device ? t("device_" + v.device) : S.unknown, date(v.lastSeenAt, true)]; })),
        h("p", { class: "muted" }, t("visitsNote")));
    }).catch(function (e) { say(body, explain(e)); });
  }

  // ---- site map and vitals (one client at a time) ---------------------------
  // A table with a heading; the first cell of a row is its header cell.
  function grid(id, title, head, rows, empty) {
    return h("section", {}, h("h3", {}, title), rows.length
      ? h("table", { id: id }, h("thead", {}, h("tr", {}, head.map(function (c, i) { return h("th", { scope: "col", class: i ? "n" : null }, c); }))),
          h("tbody", {}, rows.map(function (row) { return h("tr", {}, row.map(function (c, i) { return i ? h("td", { class: "n" }, c) : h("th", { scope: "row" }, c); })); })))
      : h("p", {}, empty));
  }
  // Complete UTC days up to the end of today (at most 90: the reports' ceiling).
  function utcDays() {
    var today = Math.floor(state.me.now / DAY) * DAY, n = Math.min(state.days, 90);
    return { from: today - (n - 1) * DAY, to: today + DAY - 1 };
  }
  function oneSite() { return state.siteId || (state.sites[0] && state.sites[0].siteId); }

  function siteMapScreen(main) {
    var body = h("div", { id: "sitemap-body" }, h("p", {}, t("loading")));
    add(main, h("h2", {}, t("navSiteMap")), pickers(function () { render(); }), body);
    if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
    var r = utcDays(), id = oneSite();
    api("POST", "/dashboard/api/analytics/site-map", { siteIds: [id], from: r.from, to: r.to }).then(function (m) {
      var sm = m.sites[0];
      fill(body,
        h("p", { class: "muted", id: "sitemap-coverage" }, t("siteMapCoverage", { site: (site(id) || {}).name || id, date: date(sm.coverageFrom, false, "UTC") })),
        sm.regrouping ? h("p", { class: "alert" }, t("siteMapRegrouping")) : null,
        sm.truncated ? h("p", { class: "alert" }, t("siteMapTruncated")) : null,
        grid("sitemap-routes", t("siteMapRoutes"), [t("page"), t("pageviews"), t("entries"), t("exits"), t("bounces")],
          sm.routes.map(function (x) { return [x.route, num(x.views), num(x.entries), num(x.exits), num(x.bounces)]; }), t("noVisits")),
        grid("sitemap-transitions", t("siteMapTransitions"), [t("fromPage"), t("toPage"), t("count")],
          sm.transitions.slice(0, 50).map(function (x) { return [x.from, x.to, num(x.count)]; }), t("noVisits")),
        h("p", { class: "muted" }, t("siteMapNote")));
    }).catch(function (e) { say(body, explain(e)); });
  }

  function vitalsScreen(main) {
    var body = h("div", { id: "vitals-body" }, h("p", {}, t("loading")));
    add(main, h("h2", {}, t("navVitals")), pickers(function () { render(); }), body);
    if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
    var r = utcDays(), id = oneSite();
    api("POST", "/dashboard/api/analytics/vitals", { siteId: id, from: r.from, to: r.to }).then(function (v) {
      function p75(row) {
        if (row.p75 == null) return S.unknown;
        return row.metric === "cls" ? decFmt.format(row.p75) : num(row.p75) + " ms";
      }
      function rating(row) { return row.rating ? h("span", { class: "band band-" + row.rating }, t("rating_" + row.rating)) : S.unknown; }
      function cells(rows) { return rows.map(function (row) { return row.p75 == null ? S.unknown : h("span", { "data-m": row.metric }, p75(row), " ", rating(row)); }); }
      var names = v.metrics.map(function (row) { return t("metric_" + row.metric); });
      fill(body,
        h("p", { class: "muted" }, t("vitalsFor", { site: (site(id) || {}).name || id })),
        grid("vitals-metrics", t("vitalsMetrics"), [t("metric"), t("p75"), t("rating"), t("samples"), t("good"), t("needsImprovement"), t("poor")],
          v.metrics.map(function (row) { return [t("metric_" + row.metric), p75(row), rating(row), num(row.samples), num(row.good), num(row.needsImprovement), num(row.poor)]; }), t("noVitals")),
        grid("vitals-pages", t("vitalsByPage"), [t("page"), t("samples")].concat(names),
          v.byPage.map(function (p) { return [p.route, num(p.samples)].concat(cells(p.metrics)); }), t("noVitals")),
        grid("vitals-devices", t("vitalsByDevice"), [t("device")].concat(names),
          v.byDevice.map(function (d) { return [d.device ? t("device_" + d.device) : S.unknown].concat(cells(d.metrics)); }), t("noVitals")),
        h("p", { class: "muted" }, t("vitalsNote")));
    }).catch(function (e) { say(body, explain(e)); });
  }

  // ---- goals, funnels, revenue and their definitions (one client at a time) --
  // A web-analytics function by its federated name (same arguments, same answer).
  function fn(name, args) { return api("POST", "/dashboard/api/fn/" + name, args); }
  function money(cents, currency) {
    if (cents == null) return S.unknown;
    return new Intl.NumberFormat(S.locale, { style: "currency", currency: currency || "BRL" }).format(cents / 100);
  }
  function matcherText(m) { return m.kind === "event" ? t("matcherEvent", { name: m.name }) : t("matcherPage", { path: m.path }); }

  function goalsScreen(main) {
    var body = h("div", { id: "goals-body" }, h("p", {}, t("loading")));
    add(main, h("h2", {}, t("navGoals")), pickers(function () { render(); }), body);
    if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noVisits"))); return; }
    var r = utcDays(), id = oneSite(), args = { siteId: id, from: r.from, to: r.to };
    Promise.all([
      fn("goalsReport", args), fn("funnelsReport", args), fn("revenueSummary", { siteIds: [id], from: r.from, to: r.to }),
      fn("affiliatesReport", args), fn("listConversions", { siteId: id, from: r.from, to: r.to, paginationOpts: { numItems: 20, cursor: null } }),
    ]).then(function (res) {
      var goals = res[0], funnels = res[1], rev = res[2], aff = res[3], conv = res[4], cur = rev.currency;
      function card(key, label, value) { return h("div", { class: "card", "data-k": key }, h("div", { class: "k" }, label), h("div", { class: "v" }, value)); }
      fill(body,
        h("p", { class: "muted" }, t("goalsFor", { site: (site(id) || {}).name || id })),
        h("section", {}, h("h3", {}, t("revenueTitle")), h("div", { class: "cards", id: "revenue-cards" },
          card("conversions", t("conversionsCount"), num(rev.conversions)),
          card("revenue", t("revenue"), money(rev.revenueCents, cur)),
          card("commission", t("commission"), money(rev.commissionCents, cur)),
          card("net", t("netRevenue"), money(rev.netRevenueCents, cur)))),
        grid("goals-table", t("goalsTitle"), [t("goal"), t("completions"), t("sessions"), t("conversionRate"), t("goalValue")],
          goals.goals.map(function (g) { return [g.name + " (" + matcherText(g.matcher) + ")", num(g.completions), num(g.sessions), rate(g.conversionRate), money(g.valueTotalCents, cur)]; }), t("noGoals")),
        funnels.funnels.length ? funnels.funnels.map(function (f) {
          return grid("funnel-" + f.key, t("funnelTitle", { name: f.name, rate: rate(f.conversionRate) }), [t("step"), t("visitors"), t("dropoff"), t("conversionRate")],
            f.steps.map(function (st) { return [st.index + ". " + st.label, num(st.visitors), num(st.dropoff), rate(st.conversionRate)]; }), t("noVisits"));
        }) : h("section", {}, h("h3", {}, t("funnelsTitle")), h("p", {}, t("noFunnels"))),
        grid("affiliates-table", t("affiliatesTitle"), [t("affiliate"), t("sessions"), t("conversionsCount"), t("revenue"), t("commission")],
          aff.affiliates.map(function (a) { return [a.name + " (" + a.slug + ")", num(a.sessions), num(a.conversions), money(a.revenueCents, aff.currency), money(a.commissionCents, aff.currency)]; }), t("noAffiliates")),
        grid("conversions-table", t("conversionsLedger"), [t("conversion"), t("when"), t("value"), t("affiliate")],
          conv.page.map(function (c) { return [c.name, date(c.occurredAt, true), money(c.valueCents, c.currency), c.affiliate ? c.affiliate.slug : "—"]; }), t("noConversionsYet")),
        canWrite() ? definitionsPanel(id) : null,
        h("p", { class: "muted" }, t("goalsNote")));
    }).catch(function (e) { say(body, explain(e)); });
  }

  // Goals, affiliates and the retention policy, for operators allowed to configure.
  function definitionsPanel(id) {
    var msg = h("div", { "aria-live": "polite", id: "definitions-msg" });
    var box = h("section", { id: "definitions" }, h("h3", {}, t("definitionsTitle")), msg);
    function field(fid, label, attrs) { var i = h("input", Object.assign({ id: fid, name: fid }, attrs || {})); return [h("label", { for: fid }, label, i), i]; }
    var gKey = field("goal-key", t("goalKey"), { required: true, pattern: "[a-z0-9_-]{1,64}" });
    var gName = field("goal-name", t("goalName"), { required: true, maxlength: 100 });
    var gPath = field("goal-path", t("goalPath"), { placeholder: "/obrigado" });
    var gValue = field("goal-value", t("goalValueCents"), { type: "number", min: 0 });
    var goalForm = h("form", { id: "goal-form", onsubmit: function (ev) {
      ev.preventDefault();
      var p = gPath[1].value.trim(), m = p.charAt(0) === "/" ? { kind: "pageview", path: p } : { kind: "event", name: p };
      var a = { siteId: id, key: gKey[1].value.trim(), name: gName[1].value.trim(), matcher: m };
      if (gValue[1].value !== "") a.valueCents = Number(gValue[1].value);
      fn("upsertGoal", a).then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
    } }, h("h4", {}, t("newGoal")), gKey[0], gName[0], gPath[0], gValue[0], h("button", { class: "primary", type: "submit", id: "goal-save" }, t("save")));
    var aSlug = field("aff-slug", t("affiliateSlug"), { required: true, pattern: "[a-z0-9][a-z0-9-]{0,63}" });
    var aName = field("aff-name", t("affiliateName"), { required: true, maxlength: 100 });
    var aBps = field("aff-bps", t("commissionBps"), { type: "number", min: 0, max: 10000, required: true });
    var aDays = field("aff-days", t("windowDays"), { type: "number", min: 1, max: 365, required: true, value: "30" });
    var affForm = h("form", { id: "affiliate-form", onsubmit: function (ev) {
      ev.preventDefault();
      fn("upsertAffiliate", { siteId: id, slug: aSlug[1].value.trim(), name: aName[1].value.trim(), commissionBps: Number(aBps[1].value), windowDays: Number(aDays[1].value) })
        .then(function () { render(); }).catch(function (e) { say(msg, explain(e)); });
    } }, h("h4", {}, t("newAffiliate")), aSlug[0], aName[0], aBps[0], aDays[0], h("button", { class: "primary", type: "submit", id: "affiliate-save" }, t("save")));
    var lists = h("div", {});
    var retention = h("div", { id: "retention" });
    var settings = h("div", { id: "site-settings" });
    add(box, lists, goalForm, affForm, retention, settings);
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
      fill(lists,
        grid("goal-defs", t("goalsDefined"), [t("goal"), t("matcher"), ""], res[0].map(function (g) { return [g.key, matcherText(g.matcher), remover("removeGoal", { siteId: id, goalId: g.goalId })]; }), t("noGoals")),
        grid("affiliate-defs", t("affiliatesDefined"), [t("affiliate"), t("commissionBps"), ""], res[1].map(function (a) { return [a.slug, num(a.commissionBps), remover("removeAffiliate", { siteId: id, affiliateId: a.affiliateId })]; }), t("noAffiliates")));
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

  // ---- people (identified visitors) ----------------------------------------
  function peopleScreen(main) {
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
        attrs))));
    }).catch(function (e) { window.alert(explain(e)); });
  }

  // ---- tracked links -------------------------------------------------------
  // One site's links with clicks and bot hits (all time, last 30 UTC days);
  // operators who may configure create, disable, enable and delete them.
  function linksScreen(main) {
    if (!state.sites.length) { add(main, h("h2", {}, t("navLinks")), h("p", {}, t("noLinks"))); return; }
    if (!site(state.siteId)) state.siteId = state.sites[0].siteId;
    var sid = state.siteId, base = "/dashboard/api/sites/" + encodeURIComponent(sid) + "/links";
    var sel = h("select", { id: "links-site", onchange: function () { state.siteId = sel.value; render(); } },
      state.sites.map(function (x) { return h("option", { value: x.siteId, selected: x.siteId === sid }, x.name); }));
    var msg = h("div", { id: "links-msg", "aria-live": "polite" });
    var body = h("div", { id: "links-body" }, h("p", {}, t("loading")));
    add(main, h("h2", {}, t("navLinks")), h("div", { class: "row" }, h("label", { for: "links-site" }, t("sitePicker"), sel)), msg, body);
    var reload = function (note) { render(); if (note) say(document.getElementById("links-msg"), note, "ok"); };
    var fail = function (e) { say(msg, explain(e)); };
    api("GET", base).then(function (links) {
      var write = canWrite();
      var rows = links.map(function (l) {
        var link = location.origin + l.path;
        var actions = h("td", {},
          h("button", { "data-toggle": l.slug, disabled: !write, onclick: function () {
            api("PATCH", base + "/" + encodeURIComponent(l.linkId), { disabled: !l.disabled }).then(function () { reload(t("saved")); }).catch(fail);
          } }, l.disabled ? t("enableLink") : t("disableLink")), " ",
          h("button", { class: "danger", "data-delete": l.slug, disabled: !write, onclick: function () {
            if (window.confirm(t("deleteLinkConfirm", { slug: l.slug }))) api("DELETE", base + "/" + encodeURIComponent(l.linkId)).then(function () { reload(t("saved")); }).catch(fail);
          } }, t("deleteLink")));
        return h("tr", { "data-link": l.slug },
          h("th", { scope: "row" }, h("div", {}, l.slug), h("div", { class: "muted" }, link), l.disabled ? h("div", { class: "alert" }, t("linkDisabled")) : null),
          h("td", { "data-col": "destination" }, l.destination),
          h("td", { "data-col": "tags" }, [l.platform, l.channel, l.campaign].filter(Boolean).join(" · ")),
          h("td", { class: "n", "data-col": "clicks" }, num(l.clicks.total)),
          h("td", { class: "n", "data-col": "clicks30" }, num(l.clicks.last30d)),
          h("td", { class: "n", "data-col": "bots" }, num(l.botHits.total)),
          h("td", { class: "n", "data-col": "bots30" }, num(l.botHits.last30d)),
          actions);
      });
      var heads = [t("linkSlug"), t("linkDestination"), t("linkTags"), t("clicksTotal"), t("clicks30d"), t("botHitsTotal"), t("botHits30d"), t("actions")];
      fill(body,
        h("section", { "aria-labelledby": "links-h" }, h("h3", { id: "links-h" }, t("linksTitle")),
          rows.length ? h("table", { id: "links" }, h("thead", {}, h("tr", {}, heads.map(function (x, i) { return h("th", { scope: "col", class: i >= 3 && i < 7 ? "n" : null }, x); }))), h("tbody", {}, rows))
            : h("p", {}, t("noLinks"))),
        write ? linkForm(base, sid, msg, reload) : null);
    }).catch(function (e) { say(body, explain(e)); });
  }

  function linkForm(base, sid, msg, reload) {
    function field(id, label, attrs) {
      var input = h("input", Object.assign({ id: id, name: id }, attrs || {}));
      return { input: input, el: h("label", { for: id }, label, input) };
    }
    var domain = ((site(sid) || {}).domains || [])[0];
    var slug = field("link-slug", t("linkSlug"), { required: true, pattern: "[a-z0-9][a-z0-9-]{0,63}" });
    var dest = field("link-destination", t("linkDestination"), { required: true, type: "url", placeholder: domain ? "https://" + domain + "/" : "" });
    var platform = field("link-platform", t("linkPlatform"), { required: true, pattern: "[a-z0-9_-]{1,32}", placeholder: "instagram" });
    var channel = field("link-channel", t("linkChannel"), { required: true, pattern: "[a-z0-9_-]{1,32}", placeholder: "bio" });
    var campaign = field("link-campaign", t("linkCampaign"), { maxlength: 100 });
    return h("section", { "aria-labelledby": "new-link-h" }, h("h3", { id: "new-link-h" }, t("newLink")),
      h("form", { id: "new-link", class: "row", onsubmit: function (ev) {
        ev.preventDefault();
        api("POST", base, { slug: slug.input.value, destination: dest.input.value, platform: platform.input.value,
          channel: channel.input.value, campaign: campaign.input.value || null })
          .then(function () { reload(t("saved")); }).catch(function (e) { say(msg, e.code === "CONFLICT" ? t("slugTaken") : explain(e)); });
      } }, slug.el, dest.el, platform.el, channel.el, campaign.el, h("button", { class: "primary", type: "submit", id: "create-link" }, t("createLink"))));
  }

  // ---- leads and spend -----------------------------------------------------
  function range() {
    var today = Math.floor(state.me.now / DAY) * DAY;
    return { from: today - state.days * DAY, to: today - 1 };
  }
  function siteIds() { return state.siteId ? [state.siteId] : state.sites.slice(0, 500).map(function (s) { return s.siteId; }); }

  function pickers(onChange) {
    var sel = h("select", { id: "site-picker", onchange: function () { state.siteId = sel.value; onChange(); } },
      h("option", { value: "" }, t("siteAll")),
      state.sites.map(function (s) { return h("option", { value: s.siteId, selected: s.siteId === state.siteId }, s.name); }));
    var days = h("select", { id: "range-picker", onchange: function () { state.days = Number(days.value); onChange(); } },
      [7, 30, 90].map(function (n) { return h("option", { value: n, selected: n === state.days }, t("rangeDays", { n: n })); }));
    return h("div", { class: "row" }, h("label", { for: "site-picker" }, t("sitePicker"), sel), h("label", { for: "range-picker" }, t("rangePicker"), days));
  }

  function band(fmt) {
    return fmt.band ? h("span", { class: "band band-" + fmt.band }, t("band_" + fmt.band)) : null;
  }

  function leadsScreen(main) {
    var body = h("div", { id: "leads-body" }, h("p", {}, t("loading")));
    add(main, h("h2", {}, t("navLeads")), pickers(function () { render(); }), body);
    if (!state.sites.length) { body.replaceChildren(h("p", {}, t("noLeads"))); return; }
    var r = range(), ids = siteIds();
    Promise.all([
      api("POST", "/dashboard/api/reports/leads", { siteIds: ids, from: r.from, to: r.to }),
      api("POST", "/dashboard/api/reports/leads-daily", { siteIds: ids, from: Math.max(r.from, r.to + 1 - 92 * DAY), to: r.to }),
    ]).then(function (res) {
      var report = res[0], daily = res[1];
      fill(body, summary(report), chart(daily, report), campaigns(report), leadList(ids, r));
    }).catch(function (e) { say(body, explain(e)); });
  }

  function summary(report) {
    // Costs and the return come from the paid origin (METRIC-03); the rest from the totals.
    var paid = (report.origins || []).find(function (o) { return o.origin === "ctwa_ad"; });
    var pf = paid ? paid.fmt : { costPerLead: S.unknown, costPerSale: S.unknown, returnOnSpend: S.unknown };
    var tt = report.totals;
    function card(key, label, value, extra) {
      return h("div", { class: "card", "data-k": key }, h("div", { class: "k" }, label), h("div", { class: "v" }, value, extra || null));
    }
    return h("section", { "aria-labelledby": "summary-h" },
      h("h3", { id: "summary-h" }, t("summaryTitle")),
      report.currencyMismatch ? h("p", { class: "alert" }, t("currencyMismatch")) : null,
      report.spendIncomplete ? h("p", { class: "alert" }, t("spendIncomplete")) : null,
      h("div", { class: "cards" },
        card("leads", t("leads"), num(tt.leads)),
        card("qualified", t("qualified"), num(tt.qualified)),
        card("won", t("sales"), num(tt.won)),
        card("revenue", t("revenue"), tt.fmt.revenue),
        card("spend", t("spend"), tt.fmt.spend),
        card("costPerLead", t("costPerLead"), pf.costPerLead),
        card("costPerSale", t("costPerSale"), pf.costPerSale),
        card("returnOnSpend", t("returnOnSpend"), pf.returnOnSpend, band(pf))),
      h("p", { class: "muted" }, t("summaryNote")));
  }

  var SVG = "http://www.w3.org/2000/svg";
  function s(tag, attrs) {
    var el = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    for (var i = 2; i < arguments.length; i++) if (arguments[i]) el.appendChild(typeof arguments[i] === "string" ? document.createTextNode(arguments[i]) : arguments[i]);
    return el;
  }
  // Bars for leads, a line for spend, each on its own scale.
  function chart(daily, report) {
    var W = 720, H = 220, P = 28, n = daily.length || 1, bw = (W - 2 * P) / n;
    var maxL = Math.max(1, Math.max.apply(null, daily.map(function (d) { return d.leads; })));
    var spends = daily.map(function (d) { return d.spendCents; });
    var maxS = Math.max(1, Math.max.apply(null, spends.map(function (x) { return x || 0; })));
    var svg = s("svg", { class: "chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": "chart-h chart-d" });
    svg.appendChild(s("desc", { id: "chart-d" }, t("chartLabel", { leads: num(report.totals.leads), spend: report.totals.fmt.spend })));
    svg.appendChild(s("line", { x1: P, y1: H - P, x2: W - P, y2: H - P, stroke: "#8c959f" }));
    daily.forEach(function (d, i) {
      var bh = (H - 2 * P) * d.leads / maxL;
      svg.appendChild(s("rect", { x: P + i * bw + 1, y: H - P - bh, width: Math.max(1, bw - 2), height: bh, fill: "#54aeff" }, s("title", {}, date(d.dayStart, false, "UTC") + ": " + num(d.leads) + " " + t("leads").toLowerCase())));
    });
    var pts = [];
    daily.forEach(function (d, i) { if (d.spendCents != null) pts.push((P + i * bw + bw / 2).toFixed(1) + "," + (H - P - (H - 2 * P) * d.spendCents / maxS).toFixed(1)); });
    if (pts.length) svg.appendChild(s("polyline", { points: pts.join(" "), fill: "none", stroke: "#bc4c00", "stroke-width": 2 }));
    if (daily.length) {
      svg.appendChild(s("text", { x: P, y: H - 8, "font-size": 11, fill: "#57606a" }, date(daily[0].dayStart, false, "UTC")));
      svg.appendChild(s("text", { x: W - P, y: H - 8, "font-size": 11, fill: "#57606a", "text-anchor": "end" }, date(daily[daily.length - 1].dayStart, false, "UTC")));
    }
    return h("section", {}, h("h3", { id: "chart-h" }, t("chartTitle")), svg,
      h("div", { class: "legend" }, h("span", {}, h("span", { class: "sw", "data-c": "leads" }), t("leads")), h("span", {}, h("span", { class: "sw", "data-c": "spend" }), t("spend"))));
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
  function campaigns(report) {
    var rows = [];
    (report.campaigns || []).forEach(function (c) {
      rows.push(h("tr", { class: "lvl0", "data-campaign": c.campaignId || "" }, h("th", { scope: "row" }, c.name || c.campaignId || t("noCampaign")), figures(c)));
      (c.adsets || []).forEach(function (a) {
        rows.push(h("tr", { class: "lvl1", "data-adset": a.adsetId || "" }, h("td", {}, a.name || a.adsetId || t("noName")), figures(a)));
        (a.ads || []).forEach(function (ad) {
          var img = ad.thumbnailUrl ? h("img", { class: "thumb", src: ad.thumbnailUrl, alt: "", loading: "lazy" }) : null;
          rows.push(h("tr", { class: "lvl2", "data-ad": ad.adId }, h("td", {}, img, ad.name || ad.adId), figures(ad)));
        });
      });
    });
    var head = h("tr", {}, h("th", { scope: "col" }, t("campaignCol")),
      ["leads", "qualified", "sales", "revenue", "spend", "costPerLead", "costPerQualified", "costPerSale", "returnOnSpend"].map(function (k) { return h("th", { scope: "col", class: "n" }, t(k)); }));
    return h("section", {}, h("h3", {}, t("campaignsTitle")),
      rows.length ? h("table", { id: "campaigns" }, h("thead", {}, head), h("tbody", {}, rows)) : h("p", {}, t("noAds")));
  }

  function leadList(ids, r) {
    var box = h("section", { id: "lead-list" }, h("h3", {}, t("leadsTitle")));
    var tbody = h("tbody", {});
    var more = h("button", { id: "more-leads" }, t("moreLeads"));
    var last = null;
    function load() {
      var q = "siteIds=" + encodeURIComponent(ids.join(",")) + "&from=" + r.from + "&to=" + r.to + "&limit=25";
      if (last) q += "&before=" + last.firstAt + "&beforeLeadId=" + encodeURIComponent(last.leadId);
      api("GET", "/dashboard/api/leads?" + q).then(function (leads) {
        leads.forEach(function (l) {
          tbody.appendChild(h("tr", { "data-lead": l.leadId },
            h("td", {}, l.label || S.unknown), h("td", {}, l.origin), h("td", {}, l.adName || l.adId || S.unknown),
            h("td", {}, date(l.firstAt, true, (site(l.siteId) || {}).timezone)), h("td", {}, t("stage_" + l.stage)),
            h("td", {}, h("button", { onclick: function () { journey(l); } }, t("seeJourney")))));
        });
        if (leads.length) last = leads[leads.length - 1];
        more.hidden = leads.length < 25;
        if (!tbody.children.length) tbody.appendChild(h("tr", {}, h("td", { colspan: 6 }, t("noLeads"))));
      }).catch(function (e) { say(box, explain(e)); });
    }
    more.addEventListener("click", load);
    add(box, h("table", {}, h("thead", {}, h("tr", {}, [t("leadLabel"), t("origin"), t("ad"), t("arrivedAt"), t("stage"), t("journey")].map(function (x) { return h("th", { scope: "col" }, x); }))), tbody), more);
    load();
    return box;
  }

  function dialog(title, content, actions) {
    var d = h("dialog", { "aria-labelledby": "dlg-h" }, h("h2", { id: "dlg-h" }, title), content,
      h("div", { class: "actions" }, actions || [], h("button", { onclick: function () { d.close(); } }, t("close"))));
    d.addEventListener("close", function () { d.remove(); });
    document.body.appendChild(d);
    d.showModal();
    return d;
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

  // ---- Integrações ---------------------------------------------------------
  function business() { return state.me.audience === "business"; }
  function otherOwnerLabel() {
    return state.me.partner ? t("partnerOwner", { partner: state.me.partner }) : t("otherOwner");
  }

  function integrations(main) {
    var msg = h("div", { id: "int-msg", "aria-live": "polite" });
    var body = h("div", {}, h("p", {}, t("loading")));
    add(main, h("h2", {}, t("integrationsTitle")), msg, body);
    var ids = state.sites.map(function (s) { return s.siteId; });
    if (business()) ids = ids.slice(0, 1);
    Promise.all([
      api("GET", "/dashboard/api/meta/connection"),
      ids.length ? api("POST", "/dashboard/api/meta/status", { siteIds: ids }) : Promise.resolve([]),
      ids.length ? api("GET", "/dashboard/api/conversions?siteIds=" + encodeURIComponent(ids.join(","))) : Promise.resolve([]),
    ]).then(function (res) {
      var conn = res[0], status = res[1], feed = res[2];
      var reload = function (note) { render(); if (note) say(document.getElementById("int-msg"), note, "ok"); };
      fill(body,
        business() && state.me.partner ? partnerCard() : null,
        connectionCard(conn, msg, reload),
        ids.length ? clients(conn, status, msg, reload) : null,
        conversionsFeed(feed));
    }).catch(function (e) { say(body, explain(e)); });
  }

  function partnerCard() {
    return h("section", { class: "partner", id: "partner" }, h("h3", {}, t("partnerCard", { partner: state.me.partner })), h("p", {}, t("partnerCardNote")));
  }

  function connectionCard(conn, msg, reload) {
    var sec = h("section", { id: "connection", "aria-labelledby": "conn-h" }, h("h3", { id: "conn-h" }, business() ? t("metaConnection") : t("agencyConnection")));
    var write = canWrite();
    if (!conn) add(sec, h("p", {}, t("notConnected")));
    else {
      add(sec, h("p", { id: "conn-state" }, conn.authorizedBy ? t("connectedBy", { name: conn.authorizedBy.name, date: date(conn.authorizedAt, true) }) : t("connectedToken", { date: date(conn.authorizedAt, true) }),
        " ", conn.expiresAt ? t("expiresAt", { date: date(conn.expiresAt, true) }) : t("neverExpires")));
      if (conn.expiringSoon) add(sec, h("p", { class: "alert", id: "expiring" }, t("expiringSoon")));
      if (conn.status !== "connected") add(sec, h("p", { class: "error" }, t("connectionInvalid", { error: conn.lastError || conn.status })));
    }
    var buttons = h("div", { class: "row" });
    if (state.me.login) add(buttons, h("button", { class: "primary", id: "connect", disabled: !write, onclick: function () { loginPopup(msg, reload); } }, conn ? t("reconnect") : t("connectFacebook")));
    else add(sec, h("p", { class: "muted" }, t("loginUnavailable")));
    if (conn) {
      add(buttons, h("button", { id: "refresh", disabled: !write, onclick: function () { api("POST", "/dashboard/api/meta/connection/refresh", {}).then(function () { reload(t("saved")); }).catch(function (e) { say(msg, explain(e)); }); } }, t("refreshAccounts")));
      add(buttons, h("button", { class: "danger", id: "disconnect", disabled: !write, onclick: function () { if (window.confirm(t("disconnectConfirm"))) api("DELETE", "/dashboard/api/meta/connection").then(function () { reload(); }).catch(function (e) { say(msg, explain(e)); }); } }, t("disconnect")));
    }
    add(sec, buttons);
    var tok = h("input", { id: "token", type: "password", autocomplete: "off" });
    add(sec, h("details", {}, h("summary", {}, t("pasteToken")),
      h("form", { class: "row", onsubmit: function (ev) {
        ev.preventDefault();
        api("PUT", "/dashboard/api/meta/connection", { accessToken: tok.value }).then(function () { tok.value = ""; reload(t("saved")); }).catch(function (e) { say(msg, explain(e)); });
      } }, h("label", { for: "token" }, t("tokenLabel"), tok), h("button", { type: "submit", disabled: !write }, t("saveToken")))));
    return sec;
  }

  // Facebook Login for Business in a popup; /meta/retorno posts {code, state} back.
  function loginPopup(msg, reload) {
    var L = state.me.login;
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    var st = Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
    var redirect = location.origin + "/meta/retorno";
    state.loginState = st;
    var q = new URLSearchParams({ client_id: L.clientId, redirect_uri: redirect, response_type: "code", state: st });
    if (L.configId) q.set("config_id", L.configId);
    var w = window.open(L.dialogUrl + "?" + q.toString(), "rastro-meta-login", "width=620,height=720");
    if (!w) say(msg, t("popupBlocked"));
    state.onLogin = function (data) {
      if (!state.loginState || data.state !== state.loginState) { say(msg, t("loginStateMismatch")); return; }
      state.loginState = null;
      if (data.error || !data.code) { say(msg, t("loginCancelled")); return; }
      api("POST", "/dashboard/api/meta/connection/code", { code: data.code, redirectUri: redirect })
        .then(function () { reload(t("saved")); }).catch(function (e) { say(msg, explain(e)); });
    };
  }
  window.addEventListener("message", function (ev) {
    if (ev.origin !== location.origin || !ev.data || ev.data.type !== "rastro-meta-login" || !state.onLogin) return;
    state.onLogin(ev.data);
  });

  function syncCell(st) {
    var accs = st.adAccounts || [];
    if (!accs.length) return S.unknown;
    return accs.map(function (a) {
      var label = a.syncState === "backfill" && a.backfill ? t("syncBackfill", a.backfill)
        : a.syncState === "error" ? t("syncError", { error: a.lastError || "" }) : t("syncLive");
      return h("div", { class: a.syncState === "error" ? "error" : "" }, label, a.lastSyncAt ? h("span", { class: "muted" }, " · " + t("lastSync", { date: date(a.lastSyncAt, true) })) : null);
    });
  }

  function clients(conn, status, msg, reload) {
    var write = canWrite();
    var listed = (conn && conn.adAccounts) || [], pixels = (conn && conn.pixels) || [];
    var filter = h("input", { id: "client-filter", type: "search" });
    var tbody = h("tbody", {});
    status.forEach(function (st) {
      var sc = site(st.siteId) || { name: st.siteId, currency: "" };
      var fail = function (e) { say(msg, explain(e)); };
      // Ad account
      var acc = h("td", { "data-col": "account" });
      if (st.adAccounts.length) {
        st.adAccounts.forEach(function (a) {
          var line = h("div", {}, a.name + " (" + a.adAccountId + ")");
          if (a.own === false) add(line, h("div", { class: "lock" }, t("lockedBy", { owner: otherOwnerLabel() })));
          else add(line, " ", h("button", { class: "danger", "data-unlink": a.adAccountId, disabled: !write, onclick: function () { unlinkDialog(st.siteId, a, msg, reload); } }, t("unlink")));
          add(acc, line);
        });
      } else if (conn) {
        var free = listed.filter(function (a) { return !a.linkedSiteId; });
        var selId = "acc-" + st.siteId;
        var sel = h("select", { id: selId }, h("option", { value: "" }, t("chooseAccount")), free.map(function (a) { return h("option", { value: a.adAccountId }, a.name + " (" + a.adAccountId + ")"); }));
        add(acc, h("label", { for: selId, class: "sr-only" }, t("chooseAccountFor", { site: sc.name })), sel, " ",
          h("button", { "data-link": st.siteId, disabled: !write, onclick: function () {
            if (!sel.value) return;
            api("POST", "/dashboard/api/sites/" + encodeURIComponent(st.siteId) + "/ad-accounts", { adAccountId: sel.value }).then(function () { reload(t("saved")); }).catch(fail);
          } }, t("link")));
      } else add(acc, h("span", { class: "muted" }, t("connectFirst")));
      // Pixel
      var px = h("td", { "data-col": "pixel" });
      if (st.pixel.pixelId) {
        add(px, h("div", {}, (st.pixel.name || "") + " (" + st.pixel.pixelId + ")"));
        if (st.pixel.testMode) add(px, h("div", { class: "alert" }, t("testMode")));
        if (st.pixel.own === false) add(px, h("div", { class: "lock" }, t("lockedBy", { owner: otherOwnerLabel() })));
        else add(px, h("button", { "data-remove-pixel": st.siteId, disabled: !write, onclick: function () {
          api("DELETE", "/dashboard/api/sites/" + encodeURIComponent(st.siteId) + "/pixel").then(function () { reload(t("saved")); }).catch(fail);
        } }, t("removePixel")));
      } else if (conn && pixels.length) {
        var pid = "px-" + st.siteId;
        var psel = h("select", { id: pid }, h("option", { value: "" }, t("choosePixel")), pixels.map(function (p) { return h("option", { value: p.pixelId }, p.name + " (" + p.pixelId + ")"); }));
        add(px, h("label", { for: pid, class: "sr-only" }, t("choosePixelFor", { site: sc.name })), psel, " ",
          h("button", { "data-set-pixel": st.siteId, disabled: !write, onclick: function () {
            if (!psel.value) return;
            api("PUT", "/dashboard/api/sites/" + encodeURIComponent(st.siteId) + "/pixel", { pixelId: psel.value }).then(function () { reload(t("saved")); }).catch(fail);
          } }, t("setPixel")));
      } else add(px, h("span", { class: "muted" }, t("noPixel")));
      // Sync and events
      var sync = h("td", { "data-col": "sync" }, syncCell(st));
      if (st.adAccounts.length) add(sync, h("button", { "data-sync": st.siteId, disabled: !write, onclick: function () {
        api("POST", "/dashboard/api/sites/" + encodeURIComponent(st.siteId) + "/meta/sync", {}).then(function () { say(msg, t("syncQueued"), "ok"); }).catch(fail);
      } }, t("syncNow")));
      var locked = st.pixel.pixelId && st.pixel.own === false;
      var ev = h("td", {}, h("button", { "data-events": st.siteId, onclick: function () { eventsSheet(st, locked, msg); } }, locked || !write ? t("viewEvents") : t("editEvents")));
      var cells = [h("th", { scope: "row" }, sc.name)];
      if (!business()) cells.push(h("td", {}, sc.currency));
      tbody.appendChild(h("tr", { "data-site": st.siteId, "data-name": (sc.name + " " + st.siteId).toLowerCase() }, cells, acc, px, sync, ev));
    });
    filter.addEventListener("input", function () {
      var q = filter.value.trim().toLowerCase();
      Array.prototype.forEach.call(tbody.children, function (tr) { tr.hidden = q && tr.getAttribute("data-name").indexOf(q) < 0; });
    });
    var heads = [business() ? t("site") : t("client")].concat(business() ? [] : [t("currency")]).concat([t("adAccount"), t("pixel"), t("sync"), t("events")]);
    return h("section", { id: "clients", "aria-labelledby": "clients-h" },
      h("h3", { id: "clients-h" }, business() ? t("yourAccount") : t("clientsTitle")),
      business() ? h("p", { class: "muted" }, t("productReads", { product: state.me.productName }) + ". " + t("pixelWarning", { product: state.me.productName })) : h("label", { for: "client-filter" }, t("filter"), filter),
      h("table", {}, h("thead", {}, h("tr", {}, heads.map(function (x) { return h("th", { scope: "col" }, x); }))), tbody));
  }

  function unlinkDialog(siteId, a, msg, reload) {
    var sc = site(siteId) || { name: siteId };
    api("GET", "/dashboard/api/sites/" + encodeURIComponent(siteId) + "/ad-accounts/" + encodeURIComponent(a.adAccountId) + "/unlink-preview").then(function (p) {
      var d = dialog(t("unlinkTitle", { account: a.name }), h("p", { id: "unlink-preview" },
        t("unlinkBody", { site: sc.name, spend: p.spend, days: num(p.days), campaigns: num(p.campaigns) }), p.partial ? " " + t("unlinkPartial") : ""),
        [h("button", { class: "danger", id: "confirm-unlink", onclick: function () {
          api("DELETE", "/dashboard/api/sites/" + encodeURIComponent(siteId) + "/ad-accounts/" + encodeURIComponent(a.adAccountId))
            .then(function () { d.close(); reload(t("saved")); }).catch(function (e) { d.close(); say(msg, explain(e)); });
        } }, t("unlink"))]);
    }).catch(function (e) { say(msg, explain(e)); });
  }

  function eventsSheet(st, locked, msg) {
    var sc = site(st.siteId) || { name: st.siteId };
    var readOnly = locked || !canWrite();
    api("GET", "/dashboard/api/sites/" + encodeURIComponent(st.siteId) + "/event-map").then(function (map) {
      var selects = {};
      var rows = map.columns.map(function (c) {
        var id = "ev-" + c.key;
        var sel = h("select", { id: id, disabled: readOnly, "data-column": c.key },
          h("option", { value: "" }, t("eventNone")),
          ["Lead", "QualifiedLead", "Schedule"].map(function (e) { return h("option", { value: e, selected: c.event === e }, t("event_" + e)); }));
        selects[c.key] = sel;
        return h("tr", {}, h("th", { scope: "row" }, h("label", { for: id }, c.name), c.group ? h("div", { class: "muted" }, c.group) : null),
          h("td", {}, sel), h("td", { class: "muted" }, c.monthCount == null ? S.unknown : t("monthCount", { n: num(c.monthCount) })));
      });
      rows.push(h("tr", {}, h("th", { scope: "row", colspan: 3 }, t("purchaseRow"))));
      var sendLead = h("input", { type: "checkbox", id: "send-lead", checked: map.sendLeadEvent, disabled: readOnly });
      var copy = h("input", { type: "checkbox", id: "copy-map", disabled: readOnly });
      var note = h("div", { "aria-live": "polite" });
      var content = h("div", { id: "events-sheet" },
        locked ? h("p", { class: "lock" }, t("eventsLocked")) : h("p", { class: "muted" }, t("eventsSheetHelp")),
        map.columns.length ? h("table", {}, h("tbody", {}, rows)) : h("p", {}, t("noColumns")),
        h("label", { class: "inline", for: "send-lead" }, sendLead, t("sendLeadEvent")),
        !business() ? h("label", { class: "inline", for: "copy-map" }, copy, t("copyEventMap")) : null,
        note);
      var save = h("button", { class: "primary", id: "save-events", disabled: readOnly || !map.columns.length, onclick: function () {
        var columns = {};
        Object.keys(selects).forEach(function (k) { columns[k] = selects[k].value || null; });
        api("PUT", "/dashboard/api/sites/" + encodeURIComponent(st.siteId) + "/event-map", { columns: columns, sendLeadEvent: sendLead.checked, copyToOthers: copy.checked })
          .then(function (res) { say(note, res.copiedTo.length ? t("copiedTo", { n: res.copiedTo.length }) : t("saved"), "ok"); })
          .catch(function (e) { say(note, explain(e)); });
      } }, t("save"));
      dialog(t("eventsSheetTitle", { site: sc.name }), content, readOnly ? [] : [save]);
    }).catch(function (e) { say(msg, explain(e)); });
  }

  function conversionsFeed(feed) {
    var sec = h("section", { id: "conversions", "aria-labelledby": "conv-h" }, h("h3", { id: "conv-h" }, t("conversionsTitle")));
    if (!feed.length) { add(sec, h("p", {}, t("noConversions"))); return sec; }
    // Business copy never names clients: one company, one site.
    var heads = [t("event")].concat(business() ? [] : [t("client")]).concat([t("leadLabel"), t("ad"), t("value"), t("status"), t("when")]);
    add(sec, h("table", {}, h("thead", {}, h("tr", {}, heads.map(function (x) { return h("th", { scope: "col" }, x); }))),
      h("tbody", {}, feed.map(function (c) {
        var sc = site(c.siteId) || { name: c.siteId };
        return h("tr", { "data-event": c.eventId }, h("td", {}, t("event_" + c.eventName)), business() ? null : h("td", {}, sc.name), h("td", {}, c.leadLabel || S.unknown),
          h("td", {}, c.adName || c.adId || S.unknown), h("td", { class: "n" }, c.valueFmt),
          h("td", {}, t("status_" + c.status)), h("td", {}, date(c.createdAt, true, sc.timezone)));
      }))));
    return sec;
  }

  start();
})();
