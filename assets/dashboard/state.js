// What the page knows: the signed-in operator, the sites, the screen and its
// picks, and what follows from them. Imports nothing.
export const DAY = 86400000;
export const state = { me: null, sites: [], view: "leads", siteId: "", days: 30, leadsPage: [], loginState: null };

// The entry module draws the current screen; a screen asks for a redraw here,
// so no screen imports the entry module.
var draw = function () {};
export function onRender(f) { draw = f; }
export function render() { draw(); }

export function site(id) { return state.sites.find(function (s) { return s.siteId === id; }); }
export function tz() { var s = site(state.siteId) || state.sites[0]; return (s && s.timezone) || "UTC"; }
export function canWrite() { return state.me && state.me.operator.canConfigure; }

// Complete UTC days up to the end of today (at most 90: the reports' ceiling).
export function utcDays() {
  var today = Math.floor(state.me.now / DAY) * DAY, n = Math.min(state.days, 90);
  return { from: today - (n - 1) * DAY, to: today + DAY - 1 };
}
export function oneSite() { return state.siteId || (state.sites[0] && state.sites[0].siteId); }

// The leads screen's range: the whole UTC days before today.
export function range() {
  var today = Math.floor(state.me.now / DAY) * DAY;
  return { from: today - state.days * DAY, to: today - 1 };
}
export function siteIds() { return state.siteId ? [state.siteId] : state.sites.slice(0, 500).map(function (s) { return s.siteId; }); }
