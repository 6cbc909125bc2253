// The Facebook Login popup lands here: hand {code, state} (or the error) to
// the page that opened it, on this origin only, and close. The opener checks
// `state` against the one it drew.
var p = new URLSearchParams(location.search);
var msg = { type: "rastro-meta-login", code: p.get("code"), state: p.get("state"), error: p.get("error") };
if (window.opener && !window.opener.closed) {
  window.opener.postMessage(msg, location.origin);
  window.close();
} else {
  document.getElementById("msg").textContent = "Abra esta página pelo painel (Integrações → Conectar com o Facebook).";
}
