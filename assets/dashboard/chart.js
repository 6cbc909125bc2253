// ---- charts a person reads -------------------------------------------------
// One small hand-drawn SVG chart for every screen (bars, an optional line on
// its own scale, the period before dashed): about 150 lines beat a vendored
// library here, as the dashboard has no build step, a strict CSP (the
// libraries looked at inject style elements) and needs exactly three shapes. Each axis has
// values; a point shows its exact figures (and the period before's) in a
// tooltip on hover or touch, and from the keyboard: the chart is one tab stop,
// ←/→ (Home/End) walk its points, and the tooltip is a polite live region so
// a screen reader says what a sighted person sees. The figures' text comes
// from the screen (`fmt`), so the chart never formats money itself.
import { S, t, h, s } from "./dom.js";

var W = 720, H = 220, L = 56, R = 56, T = 12, B = 30;

// A round step for about four ticks over [0, max]; the last tick is at or
// above max, so nothing is drawn past the top of the chart.
function ticks(max) {
  var raw = max / 4, mag = Math.pow(10, Math.floor(Math.log10(raw || 1))), step = mag;
  [1, 2, 5, 10].some(function (m) { step = m * mag; return m * mag >= raw; });
  step = Math.max(1, step); // whole counts and cents: no fractional ticks
  var out = [];
  for (var v = 0; out.length < 8; v += step) { out.push(v); if (v >= max) break; }
  return { values: out, top: out[out.length - 1] || 1 };
}

// `o`: { id, labelledBy, describe (text for screen readers), points: [{ label,
// bar, line, before }], bar: { name, fmt }, line: { name, fmt } (optional),
// before: { name } (optional), xLabel(point) }.
export function chart(o) {
  var pts = o.points, n = pts.length || 1, bw = (W - L - R) / n, ih = H - T - B;
  var barMax = ticks(Math.max(1, Math.max.apply(null, pts.map(function (p) { return Math.max(p.bar || 0, o.before ? p.before || 0 : 0); }))));
  var lineVals = o.line ? pts.map(function (p) { return p.line; }).filter(function (v) { return v != null; }) : [];
  var lineMax = lineVals.length ? ticks(Math.max(1, Math.max.apply(null, lineVals))) : null;
  function y(v, scale) { return T + ih - ih * v / scale.top; }
  function x(i) { return L + i * bw + bw / 2; }
  var svg = s("svg", { class: "chart", id: o.id, viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": o.labelledBy + " " + o.id + "-d" });
  svg.appendChild(s("desc", { id: o.id + "-d" }, o.describe));
  // The axes: the bars' values on the left, the line's on the right.
  barMax.values.forEach(function (v) {
    svg.appendChild(s("line", { class: "grid", x1: L, x2: W - R, y1: y(v, barMax), y2: y(v, barMax) }));
    svg.appendChild(s("text", { class: "tick y", x: L - 6, y: y(v, barMax) + 4, "text-anchor": "end" }, o.bar.axis ? o.bar.axis(v) : num(v)));
  });
  if (lineMax) lineMax.values.forEach(function (v) {
    svg.appendChild(s("text", { class: "tick y2", x: W - R + 6, y: y(v, lineMax) + 4 }, o.line.axis ? o.line.axis(v) : num(v)));
  });
  // Dates under the first, middle and last points.
  [0, Math.floor((pts.length - 1) / 2), pts.length - 1].filter(function (i, k, a) { return i >= 0 && a.indexOf(i) === k; }).forEach(function (i) {
    svg.appendChild(s("text", { class: "tick x", x: x(i), y: H - 10, "text-anchor": i === 0 ? "start" : i === pts.length - 1 ? "end" : "middle" }, pts[i].label));
  });
  pts.forEach(function (p, i) {
    var bh = ih * (p.bar || 0) / barMax.top;
    svg.appendChild(s("rect", { class: "bar", x: L + i * bw + 1, y: T + ih - bh, width: Math.max(1, bw - 2), height: bh }));
  });
  function polyline(cls, get, scale) {
    var d = [];
    pts.forEach(function (p, i) { var v = get(p); if (v != null) d.push(x(i).toFixed(1) + "," + y(v, scale).toFixed(1)); });
    if (d.length) svg.appendChild(s("polyline", { class: cls, points: d.join(" "), fill: "none" }));
  }
  if (lineMax) polyline("line", function (p) { return p.line; }, lineMax);
  if (o.before) polyline("compare", function (p) { return p.before; }, barMax);
  svg.appendChild(s("line", { class: "axis", x1: L, y1: T + ih, x2: W - R, y2: T + ih }));
  var mark = s("line", { class: "mark", x1: 0, x2: 0, y1: T, y2: T + ih, visibility: "hidden" });
  svg.appendChild(mark);

  var tip = h("div", { class: "tip", id: o.id + "-tip", role: "status", "aria-live": "polite", hidden: true });
  var box = h("div", { class: "chart-box", tabindex: "0", "data-chart": o.id, "aria-label": t("chartKeys"), "aria-describedby": o.id + "-d" }, svg, tip);
  var at = -1;
  function show(i) {
    if (!pts.length) return;
    at = Math.max(0, Math.min(pts.length - 1, i));
    var p = pts[at];
    var lines = [h("strong", {}, p.label), h("span", { "data-v": "bar" }, o.bar.name + ": " + o.bar.fmt(p.bar))];
    if (o.line) lines.push(h("span", { "data-v": "line" }, o.line.name + ": " + o.line.fmt(p.line)));
    if (o.before && p.before != null) lines.push(h("span", { "data-v": "before" }, o.before.name + ": " + o.bar.fmt(p.before)));
    tip.replaceChildren.apply(tip, lines);
    tip.hidden = false;
    tip.setAttribute("data-point", String(at));
    // Beside the point, inside the box (percentages: the SVG scales with the page).
    var left = x(at) / W * 100;
    tip.style.left = left > 60 ? "auto" : left + "%";
    tip.style.right = left > 60 ? (100 - left) + "%" : "auto";
    mark.setAttribute("x1", x(at)); mark.setAttribute("x2", x(at)); mark.setAttribute("visibility", "visible");
  }
  function hide() { tip.hidden = true; mark.setAttribute("visibility", "hidden"); }
  function pointAt(ev) {
    var r = svg.getBoundingClientRect();
    return Math.floor(((ev.clientX - r.left) / r.width * W - L) / bw);
  }
  svg.addEventListener("pointermove", function (ev) { show(pointAt(ev)); });
  svg.addEventListener("pointerdown", function (ev) { show(pointAt(ev)); });
  box.addEventListener("pointerleave", function () { if (document.activeElement !== box) hide(); });
  box.addEventListener("focus", function () { show(at < 0 ? pts.length - 1 : at); });
  box.addEventListener("blur", hide);
  box.addEventListener("keydown", function (ev) {
    var k = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: pts.length - 1 }[ev.key];
    if (k == null) { if (ev.key === "Escape") hide(); return; }
    ev.preventDefault();
    show(k);
  });
  return box;
}

var intFmt = new Intl.NumberFormat(S.locale, { maximumFractionDigits: 1 });
function num(v) { return intFmt.format(v); }
