/*
 * rastro browser tracker. Contract: design/ANALYTICS.md §3.2-§3.4, rules TRK-04..TRK-10;
 * WhatsApp taps: docs/whatsapp.md, rules WA-01..WA-05.
 *
 * <script defer src="https://<host>/rastro/tracker.js" data-site-id="loja-y"></script>
 *   data-api           base URL of rastrod (default: this script's origin)
 *   data-hash          hash routing: "#/..." and "#!/..." fragments are part of the path
 *   data-cookieless    store nothing in the browser, send no visitorId
 *   data-whatsapp-ref  "off": WhatsApp taps are counted, no reference is written into the message
 *
 * On the page, an element marked data-rastro-whatsapp (value: the business number) is a
 * WhatsApp link whatever its href.
 *
 * Public API: rastro.track(name, properties?), rastro.identify(visitorId), rastro.reset().
 *
 * Plain ES2017, no dependencies. Built by `npm run build` (terser) into dist/tracker.js,
 * which must stay <= 2,560 bytes after gzip -9 (WA-05, TRK-04).
 */
(() => {
  const w = window, d = document, n = navigator, l = location, perf = performance;
  const now = Date.now;
  const on = (target, type, fn, capture) => target.addEventListener(type, fn, capture);
  const VID = 'rastro_vid';
  const MAX_EVENTS = 50, MAX_BYTES = 65536;

  // The API exists even when the tracker is off, so calls from the page never throw.
  const api = w.rastro = { track() {}, identify() {}, reset() {} };

  // localStorage may throw (disabled storage, sandboxed frames): every access goes through here.
  const store = (f) => { try { return f(localStorage); } catch (e) {} };

  const script = d.currentScript || d.querySelector('script[data-site-id]');
  const data = script ? script.dataset : {};
  const siteId = data.siteId;

  // Skips (TRK-06): automation, non-http(s) pages, an opted-out browser, a broken embed.
  if (!siteId || n.webdriver || !/^https?:$/.test(l.protocol) ||
      store((s) => s.getItem('rastro_ignore')) == 'true') return;

  const endpoint = (data.api || new URL(script.src).origin).replace(/\/+$/, '') + '/rastro/events';
  const hashMode = data.hash != null;
  const bot = w._phantom || w.__nightmare || w.Cypress ? true : undefined;

  /* ---------------- identity (TRK-07, TRK-08) ---------------- */

  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  // prefix + 22 random base64url chars (256 % 64 == 0, so `& 63` is unbiased).
  const randomId = (prefix) =>
    prefix + Array.from(crypto.getRandomValues(new Uint8Array(22)), (b) => ALPHABET[b & 63]).join('');
  // What the server accepts as a visitorId (§3.3); anything else would cost the whole batch.
  const validId = (id) => /^(?!c_)[\w-]{8,64}$/.test(id);

  let cookieless;
  const goCookieless = () => { cookieless = 1; store((s) => s.removeItem(VID)); };
  if (data.cookieless != null) goCookieless();

  // The stored id, created on first use; undefined when storage does not work.
  const visitorId = () => cookieless ? undefined : store((s) => {
    let id = s.getItem(VID);
    if (!validId(id)) s.setItem(VID, id = randomId('v_'));
    return id;
  });
  const setVisitor = (id) => {
    if (!cookieless) {
      flush(); // events queued so far belong to the previous visitor
      store((s) => s.setItem(VID, id));
    }
  };
  api.identify = (id) => { if (validId(id)) setVisitor(id); };
  api.reset = () => setVisitor(randomId('v_'));

  /* ---------------- transport (TRK-09) ---------------- */

  let queue = [], timer, inFlight = 0;
  const push = (event) => {
    event.ts = now();
    queue.push(event);
    timer = timer || setTimeout(flush, 1000);
  };

  // Sends the queue in batches of <= 50 events and <= 64 KiB; with `beacon` via sendBeacon.
  function flush(beacon) {
    clearTimeout(timer);
    timer = 0;
    if (d.prerendering) return; // kept until shown: start() queues the pageview, which schedules a flush
    const vid = queue[0] && visitorId();
    while (queue.length) {
      let count = Math.min(queue.length, MAX_EVENTS), body, blob;
      // Halve the batch until it fits; a single event over the limit is dropped.
      for (;;) {
        body = JSON.stringify({
          siteId, visitorId: vid, sentAt: now(), language: n.language,
          hash: hashMode || undefined, bot, events: queue.slice(0, count),
        });
        blob = new Blob([body], { type: 'text/plain' });
        if (blob.size <= MAX_BYTES || count < 2) break;
        count >>= 1;
      }
      queue.splice(0, count);
      const size = blob.size;
      if (size <= MAX_BYTES && !(beacon && n.sendBeacon(endpoint, blob))) {
        // keepalive requests share a 64 KiB in-flight budget per page; past it the browser
        // refuses the request, so a batch that does not fit goes without keepalive.
        const keepalive = inFlight + size <= MAX_BYTES;
        if (keepalive) inFlight += size;
        // text/plain keeps it a simple request: no CORS preflight.
        fetch(endpoint, { method: 'POST', keepalive, body, headers: { 'Content-Type': 'text/plain' } })
          .then((r) => r.json())
          .then((answer) => { if (answer.cookieless) goCookieless(); })
          .catch(() => {})
          .then(() => { if (keepalive) inFlight -= size; });
      }
    }
  }

  const track = api.track = (name, properties) => push({ type: 'event', url: l.href, name, properties });

  /* ---------------- WhatsApp taps (WA-01..WA-04) ---------------- */

  const REF = '23456789ABCDEFGHJKMNPQRSTUVWXYZ';
  // 6 symbols of 31. A byte modulo 31 would favour the first 8 symbols (256 = 8 * 31 + 8),
  // so two taps' references would collide ~1.7% more often; rejecting the bytes >= 248
  // (8 in 256) keeps every symbol equally likely.
  const mintRef = (ref = '') => {
    while (ref.length < 6) for (const b of crypto.getRandomValues(new Uint8Array(8))) if (b < 248) ref += REF[b % 31];
    return ref.slice(0, 6);
  };

  // One listener, capturing on the document: it runs before the page's own handlers and
  // before the link is followed.
  on(d, 'click', (e) => {
    const t = e.target;
    if (!t.closest) return;
    const link = t.closest('a[href]'), mark = t.closest('[data-rastro-whatsapp]'), href = link && link.href;
    // The business number: the mark's value, else the link's (wa.me/<n>, .../send?phone=<n>).
    const number = ((mark && mark.dataset.rastroWhatsapp) || (/^(?:https:\/\/wa\.me\/|(?:https:\/\/api\.whatsapp\.com|whatsapp:\/\/)\/?send\/?\?(?:[^#]*&)?phone=(?:\+|%2B)?)(\d+)/i.exec(href) || [])[1] || '').replace(/\D/g, '');
    if (!mark && !number) return;
    let ref;
    if (link && data.whatsappRef != 'off') {
      // " (ref R7K2QX)" at the end of the prefilled message (`text`, created when absent), the
      // rest of the address as it was; the href as written is put back once the click is over.
      const raw = link.getAttribute('href'), tag = encodeURIComponent('(ref ' + (ref = mintRef()) + ')');
      const m = /[?&]text=([^&#]*)/.exec(href);
      link.href = m ? href.replace(m[0], (x) => x + (m[1] ? '%20' : '') + tag)
        : href.replace(/#|$/, (h) => (/^[^#]*\?/.test(href) ? '&' : '?') + 'text=' + tag + h);
      setTimeout(() => link.setAttribute('href', raw));
    }
    track('whatsapp_click', { number: number || undefined, ref });
    flush(1); // the page is usually being left
  }, true);

  /* ---------------- web vitals ---------------- */

  const navEntry = () => perf.getEntriesByType('navigation')[0] || {};
  // Milliseconds since the page was shown (activationStart: prerendered pages).
  const sinceActivation = (t) => Math.max(0, Math.round(t - (navEntry().activationStart || 0)));

  let metrics;        // the current view's lcp / fcp / cls
  let interactions;   // interactionId -> longest duration, for INP
  let clsWindow, clsFirst, clsLast; // current CLS session window
  let softView = 0;   // 1 after an SPA navigation or a bfcache restore: only cls and inp
  let firstHidden = d.visibilityState == 'hidden' && !d.prerendering ? 0 : Infinity;
  let clsSupported;
  const drains = [];  // takeRecords() of every observer, run before reading the metrics

  const observe = (type, fn, options) => {
    try {
      const o = new PerformanceObserver((list) => list.getEntries().forEach(fn));
      o.observe(Object.assign({ type, buffered: true }, options));
      drains.push(() => o.takeRecords().forEach(fn));
    } catch (e) {}
  };
  try { clsSupported = PerformanceObserver.supportedEntryTypes.includes('layout-shift'); } catch (e) {}

  // LCP: the last candidate before the page was first hidden (the browser stops at input).
  observe('largest-contentful-paint', (e) => {
    if (!softView && e.startTime < firstHidden) metrics.lcp = sinceActivation(e.startTime);
  });
  observe('paint', (e) => {
    if (!softView && e.name == 'first-contentful-paint' && e.startTime < firstHidden) {
      metrics.fcp = sinceActivation(e.startTime);
    }
  });
  // CLS: largest session window (gaps < 1 s, window < 5 s) of shifts without recent input.
  observe('layout-shift', (e) => {
    if (!e.hadRecentInput) {
      if (clsWindow && e.startTime - clsLast < 1000 && e.startTime - clsFirst < 5000) {
        clsWindow += e.value;
      } else {
        clsWindow = e.value;
        clsFirst = e.startTime;
      }
      clsLast = e.startTime;
      metrics.cls = Math.max(metrics.cls || 0, clsWindow);
    }
  });
  // INP: longest duration per interaction; see vitals() for the percentile.
  const onInteraction = (e) => {
    const id = e.interactionId;
    if (id) interactions[id] = Math.max(interactions[id] || 0, e.duration);
  };
  observe('event', onInteraction, { durationThreshold: 40 });
  observe('first-input', onInteraction);

  /* ---------------- page views (TRK-05, TRK-10) ---------------- */

  let pageviewId, pathKey, engaged, visibleSince, sentVitals, hideHandled;
  const visible = () => d.visibilityState == 'visible';
  const engagedMs = () => engaged + (visibleSince ? now() - visibleSince : 0);
  // The stored path (§3.4): pathname, plus a "#/" or "#!/" fragment cut at ? or & in hash mode.
  const path = () => l.pathname + (hashMode && /^#!?\//.test(l.hash) ? l.hash.split(/[?&]/)[0] : '');

  // Starts a page view: fresh id, engagement clock and per-view metrics.
  const view = (referrer) => {
    pageviewId = randomId('p_');
    pathKey = path();
    engaged = 0;
    visibleSince = visible() ? now() : 0;
    metrics = clsSupported ? { cls: 0 } : {};
    interactions = {};
    clsWindow = 0;
    sentVitals = hideHandled = 0;
    push({ type: 'pageview', pageviewId, url: l.href, referrer });
  };

  // The vitals of the current view; sent only when there is something new to say.
  const vitals = () => {
    drains.forEach((f) => f());
    const v = Object.assign({}, metrics);
    const durations = Object.values(interactions).sort((a, b) => b - a);
    // ~p98: the worst interaction, or the 50th-worst per 50 interactions.
    if (durations.length) v.inp = Math.round(durations[Math.min(durations.length - 1, durations.length / 50 | 0)]);
    const nav = navEntry();
    if (!softView && nav.responseStart > 0) v.ttfb = sinceActivation(nav.responseStart);
    const json = JSON.stringify(v);
    if (json != '{}' && json != sentVitals) {
      sentVitals = json;
      push(Object.assign({ type: 'vitals', pageviewId }, v));
    }
  };

  // Queues the engagement and vitals of the current view (on hide, or when leaving it).
  const leave = () => {
    if (pageviewId) {
      push({ type: 'engagement', pageviewId, engagedMs: engagedMs() });
      vitals();
    }
  };

  // Page hidden or unloaded: report the current view once, then send with sendBeacon.
  const hide = () => {
    if (!hideHandled) {
      hideHandled = 1;
      leave();
    }
    flush(1);
  };

  on(d, 'visibilitychange', (e) => {
    if (visible()) {
      visibleSince = now();
      hideHandled = 0;
    } else {
      firstHidden = Math.min(firstHidden, e.timeStamp);
      if (visibleSince) engaged += now() - visibleSince;
      visibleSince = 0;
      hide();
    }
  });
  on(w, 'pagehide', hide);

  // A new stored path is a new view; the same path again is not.
  const route = () => {
    if (path() != pathKey) {
      leave();
      softView = 1;
      view();
    }
  };

  const start = () => {
    view(d.referrer || undefined); // the referrer belongs to the first view of a hard load only
    ['pushState', 'replaceState'].forEach((name) => {
      const original = history[name];
      history[name] = function () {
        const result = original.apply(this, arguments);
        route();
        return result;
      };
    });
    on(w, 'popstate', route);
    if (hashMode) on(w, 'hashchange', route);
    // A bfcache restore is a new view even on the same path.
    on(w, 'pageshow', (e) => {
      if (e.persisted) {
        softView = 1;
        view();
      }
    });
  };

  // A prerendered page is counted when it is shown.
  if (d.prerendering) d.addEventListener('prerenderingchange', start, { once: true });
  else start();
})();
