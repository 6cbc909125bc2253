// ---- Integrações ---------------------------------------------------------
import { state, site, canWrite, render } from "./state.js";
import { S, t, h, add, num, date, say, fill, dialog } from "./dom.js";
import { api, explain } from "./api.js";
import { leadAdsSection } from "./leadads.js";

function business() { return state.me.audience === "business"; }
function otherOwnerLabel() {
  return state.me.partner ? t("partnerOwner", { partner: state.me.partner }) : t("otherOwner");
}

export function integrations(main) {
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
      state.me.leadAds && ids.length ? leadAdsSection(ids, msg) : null,
      conversionsFeed(feed, status));
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
      add(px, clickIds(st, sc, st.pixel.own === false || !write, reload));
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

// WA-30: the site's click-to-WhatsApp conversions by click id, and its
// WhatsApp Business Account; off until both are given.
function clickIds(st, sc, readOnly, reload) {
  var id = st.siteId;
  var on = h("input", { type: "checkbox", id: "click-ids-" + id, checked: !!st.pixel.sendClickIds, disabled: readOnly });
  var waba = h("input", { type: "text", id: "waba-" + id, inputmode: "numeric", autocomplete: "off", maxlength: 20,
    value: st.pixel.whatsappBusinessAccountId || "", disabled: readOnly });
  var note = h("div", { "aria-live": "polite" });
  var form = h("form", { "data-click-ids": id, onsubmit: function (ev) {
    ev.preventDefault();
    api("PUT", "/dashboard/api/sites/" + encodeURIComponent(id) + "/click-ids", { sendClickIds: on.checked, whatsappBusinessAccountId: waba.value.trim() || null })
      .then(function () { reload(t("saved")); }).catch(function (e) { say(note, explain(e)); });
  } },
    h("p", { class: "muted" }, t("clickIdsHelp")),
    h("label", { class: "inline", for: on.id }, on, t("sendClickIds")),
    h("label", { for: waba.id }, t("wabaId"), waba),
    h("p", { class: "muted" }, t("fbclidHelp")),
    readOnly ? null : h("button", { type: "submit" }, t("save")),
    note);
  return h("details", { "data-click-ids-for": id },
    h("summary", {}, st.pixel.sendClickIds ? t("clickIdsOn") : t("clickIdsTitle")), form);
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

function conversionsFeed(feed, status) {
  var sec = h("section", { id: "conversions", "aria-labelledby": "conv-h" }, h("h3", { id: "conv-h" }, t("conversionsTitle")));
  // Each pixel's queue: waiting, sent (today and in 30 days), failed.
  var withPixel = status.filter(function (st) { return st.pixel.pixelId; });
  if (withPixel.length) add(sec, h("table", { id: "conversion-counters" },
    h("thead", {}, h("tr", {}, [business() ? t("site") : t("client"), t("status_pending"), t("status_sent"), t("sentToday"), t("sent30d"), t("status_failed")]
      .map(function (x, i) { return h("th", { scope: "col", class: i ? "n" : null }, x); }))),
    h("tbody", {}, withPixel.map(function (st) {
      var c = st.conversions, l = c.last30d, sum = l ? l.Purchase + l.QualifiedLead + l.Lead + l.Schedule : null;
      return h("tr", { "data-site": st.siteId }, h("th", { scope: "row" }, (site(st.siteId) || { name: st.siteId }).name),
        h("td", { class: "n", "data-col": "pending" }, num(c.pending)), h("td", { class: "n", "data-col": "sent" }, num(c.sent)),
        h("td", { class: "n", "data-col": "sentToday" }, num(c.sentToday)), h("td", { class: "n", "data-col": "sent30d" }, num(sum)),
        h("td", { class: "n", "data-col": "failed" }, num(c.failed)));
    }))));
  if (!feed.length) { add(sec, h("p", {}, t("noConversions"))); return sec; }
  // Business copy never names clients: one company, one site.
  var heads = [t("event")].concat(business() ? [] : [t("client")]).concat([t("leadLabel"), t("ad"), t("value"), t("status"), t("when")]);
  add(sec, h("table", { id: "conversion-feed" }, h("thead", {}, h("tr", {}, heads.map(function (x) { return h("th", { scope: "col" }, x); }))),
    h("tbody", {}, feed.map(function (c) {
      var sc = site(c.siteId) || { name: c.siteId };
      // A failed one says why its last attempt failed (a code first, never a secret).
      var st = h("td", { "data-col": "status" }, t("status_" + c.status), c.lastError ? h("div", { class: "muted", "data-last-error": "" }, c.lastError) : null);
      // A site sale (WA-33) has no lead: it says so.
      return h("tr", { "data-event": c.eventId }, h("td", {}, t("event_" + c.eventName)), business() ? null : h("td", {}, sc.name),
        h("td", c.conversionId ? { "data-site-sale": "" } : {}, c.leadLabel || (c.conversionId ? t("siteSale") : S.unknown)),
        h("td", {}, c.adName || c.adId || S.unknown), h("td", { class: "n" }, c.valueFmt),
        st, h("td", {}, date(c.createdAt, true, sc.timezone)));
    }))));
  return sec;
}
