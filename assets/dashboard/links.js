// ---- tracked links -------------------------------------------------------
import { state, site, canWrite, render } from "./state.js";
import { t, h, add, num, say, fill } from "./dom.js";
import { api, explain, csvButton } from "./api.js";

// One site's links with clicks and bot hits (all time, last 30 UTC days);
// operators who may configure create, disable, enable and delete them.
export function linksScreen(main) {
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
      h("section", { "aria-labelledby": "links-h" }, h("div", { class: "row between" }, h("h3", { id: "links-h" }, t("linksTitle")),
        csvButton("listTrackedLinks", "links", { siteId: sid, now: state.me.now })),
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
