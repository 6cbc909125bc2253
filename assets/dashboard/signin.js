// ---- sign-in -------------------------------------------------------------
import { t, h, say, root, fill } from "./dom.js";
import { api, explain } from "./api.js";

// `onSignedIn` runs once the session is open (the entry module's start).
export function signInScreen(note, onSignedIn) {
  var msg = h("div", { "aria-live": "polite" });
  var name = h("input", { id: "op-name", name: "username", autocomplete: "username", required: true });
  var pw = h("input", { id: "op-password", name: "password", type: "password", autocomplete: "current-password", required: true });
  var form = h("form", {
    onsubmit: function (ev) {
      ev.preventDefault();
      api("POST", "/dashboard/api/signin", { name: name.value, password: pw.value })
        .then(function () { pw.value = ""; return onSignedIn(); })
        .catch(function (e) { say(msg, e.status === 429 ? t("tooManyAttempts") : e.status === 401 ? t("wrongPassword") : explain(e)); });
    }
  },
    h("label", { for: "op-name" }, t("operatorName"), name),
    h("label", { for: "op-password" }, t("password"), pw),
    h("button", { class: "primary", type: "submit", id: "signin" }, t("signIn")));
  fill(root(), h("main", { class: "signin" }, h("h1", {}, t("signInTitle")), note ? h("p", { class: "alert" }, note) : null, msg, form));
  name.focus();
}
